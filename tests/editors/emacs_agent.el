;;; emacs_agent.el --- Driver for tests/editors/test_emacs.py  -*- lexical-binding: t; -*-

;; Loaded by `emacs -Q --batch -l init.el -l emacs_agent.el' after an init file
;; that set up the shipped package (editor-configs/emacs/agent-lsp.el) as a
;; user would.  The environment says what to do:
;;
;;   AGENT_EMACS_MODE    eglot-fix    pyflakes (pylsp behind the proxy) flags line 10;
;;                                    `agent-lsp-fix' there.
;;                       eglot-task   `agent-lsp-run-task' "make the failing test pass".
;;                       eglot-cancel the same task, cancelled with `agent-lsp-cancel'
;;                                    while the model thinks.
;;                       lsp-fix      lsp-mode with pylsp plus agent-lsp as an add-on:
;;                                    `agent-lsp-run-tests', then `agent-lsp-fix' on
;;                                    the failure it reports in tests/test_calc.py.
;;                       lsp-menu     the same, but the fix is lsp-mode's own code
;;                                    action menu (`lsp-execute-code-action').
;;                       CLIENT-tests in tests/test_calc.py: C-u `agent-lsp-run-tests',
;;                                    then `agent-lsp-fix' on the failure; the fix
;;                                    lands in calc.py, which is not visited.
;;                       CLIENT-source in calc.py: C-u `agent-lsp-run-tests'; the failure
;;                                    is reported for tests/test_calc.py (eglot: in
;;                                    `flymake-show-project-diagnostics', unvisited).
;;                       CLIENT is eglot (proxy in front of pylsp), alone (eglot with
;;                       agent-lsp standalone), missing (proxy setup, wrapped server not
;;                       installed) or lsp (lsp-mode).
;;   AGENT_EMACS_ROOT    the project; calc.py is visited.
;;   AGENT_EMACS_RESULT  where to write what was seen, as JSON.
;;
;; Then: wait for the outcome ("agent-lsp: completed: ..."), record the
;; buffer (unsaved) and the disk.  Always exits: 0 on success, 1 on
;; failure, 2 from the watchdog.

;;; Code:

(require 'cl-lib)
(require 'seq)

(defvar agent-test-mode (getenv "AGENT_EMACS_MODE"))
(defvar agent-test-root (file-name-as-directory (getenv "AGENT_EMACS_ROOT")))
(defvar agent-test-result (getenv "AGENT_EMACS_RESULT"))
(defvar agent-test-seen (make-hash-table :test 'equal))
(defvar agent-test-start (float-time))

(defun agent-test-log (format-string &rest args)
  (princ (format "[emacs-driver %5.1fs] %s\n" (- (float-time) agent-test-start)
                 (apply #'format format-string args))
         #'external-debugging-output))

(defun agent-test-put (key value) (puthash key value agent-test-seen))
(defun agent-test-get (key) (gethash key agent-test-seen))
(defun agent-test-push (key value)
  (puthash key (vconcat (gethash key agent-test-seen) (vector value)) agent-test-seen))

(defun agent-test-save ()
  (let ((coding-system-for-write 'utf-8))
    (with-temp-file agent-test-result
      (insert (json-serialize agent-test-seen :null-object nil :false-object :json-false)))))

(defun agent-test-finish (code)
  (unless (eq code 0)                   ; the servers' stderr, for the failure report
    (dolist (buffer (buffer-list))
      (when (string-match-p "stderr" (buffer-name buffer))
        (agent-test-push "stderr" (with-current-buffer buffer
                                    (format "%s:\n%s" (buffer-name) (buffer-string)))))))
  (condition-case err (agent-test-save)
    (error (agent-test-log "could not save the result: %S" err)))
  (kill-emacs code))

;; Watchdog: whatever happens, this Emacs exits.
(run-at-time 200 nil (lambda ()
                       (agent-test-put "error" "watchdog: the driver did not finish in time")
                       (agent-test-finish 2)))

(defun agent-test-flush ()
  "Do what Emacs does when idle, which never happens in batch.
eglot sends didChange from an idle timer (`eglot-send-changes-idle-time')."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and (bound-and-true-p eglot--managed-mode)
                 (bound-and-true-p eglot--recent-changes))
        (eglot--signal-textDocument/didChange)))))

(defun agent-test-wait (seconds what predicate)
  (let ((deadline (+ (float-time) seconds)) value)
    (while (not (setq value (funcall predicate)))
      (when (> (float-time) deadline)
        (error "Timed out after %s s waiting for %s" seconds what))
      (agent-test-flush)
      (accept-process-output nil 0.05))
    (agent-test-log "got %s" what)
    value))

(defun agent-test-text (file)
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8)) (insert-file-contents file))
    (buffer-string)))

(defun agent-test-buffer-text ()
  (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max))))

(defun agent-test-method-name (method)
  (let ((name (if (symbolp method) (symbol-name method) method)))
    (if (string-prefix-p ":" name) (substring name 1) name)))

(defun agent-test-note-message (message)
  (agent-test-log "showMessage: %s" message)
  (agent-test-push "messages" message))

(defun agent-test-outcome ()
  (seq-find (lambda (m) (string-match-p
                         "\\`agent-lsp: \\(completed\\|failed\\|error\\|cancelled\\): " m))
            (agent-test-get "messages")))

(defun agent-test-record-outcome (calc-buffer calc-file)
  (let ((outcome (agent-test-wait 60 "the outcome message" #'agent-test-outcome)))
    (agent-test-put "outcome" outcome)
    (with-current-buffer calc-buffer
      (agent-test-put "buffer" (agent-test-buffer-text))
      (agent-test-put "modified" (if (buffer-modified-p) t :json-false)))
    (agent-test-put "disk" (agent-test-text calc-file))
    (agent-test-put "transcript" (with-current-buffer (agent-lsp-show-log)
                                   (buffer-substring-no-properties (point-min) (point-max))))))

;;;; eglot

(defun agent-test-eglot-diagnostics ()
  (mapcar (lambda (d)
            (let ((lsp (cdr (assoc 'eglot-lsp-diag (eglot--diag-data d)))))
              (list :line (line-number-at-pos (flymake-diagnostic-beg d))
                    :text (flymake-diagnostic-text d)
                    :source (or (plist-get lsp :source) "")
                    :message (or (plist-get lsp :message) ""))))
          (flymake-diagnostics)))

(advice-add 'display-warning :before
            (lambda (type message &rest _)
              (when (eq type 'agent-lsp)
                (agent-test-log "warning: %s" message)
                (agent-test-push "warnings" message))))

(defun agent-test-prompts ()
  "Answer eglot's y-or-n-p prompts with y, as the user would, and record them."
  (advice-add 'y-or-n-p :around
              (lambda (_ prompt)
                (agent-test-log "y-or-n-p (answered y): %s" prompt)
                (agent-test-push "prompts" prompt)
                t)))

(defun agent-test-record-closed (file)
  "What the user has of FILE, which was not visited: its buffer, if any, and the disk."
  (let ((buffer (find-buffer-visiting file)))
    (agent-test-put "calc_visited" (if buffer t :json-false))
    (when buffer
      (with-current-buffer buffer
        (agent-test-put "buffer" (agent-test-buffer-text))
        (agent-test-put "modified" (if (buffer-modified-p) t :json-false))))
    (agent-test-put "disk" (agent-test-text file))))

(defun agent-test-listed-diagnostics (file)
  "eglot's diagnostics for FILE, not visited, as `agent-test-eglot-diagnostics' has them."
  (mapcar (lambda (d)
            (let ((text (flymake-diagnostic-text d)))
              (list :line (car (flymake-diagnostic-beg d))
                    :text text
                    :source (if (string-prefix-p "agent-lsp: " text) "agent-lsp" "")
                    :message (string-remove-prefix "agent-lsp: " text))))
          (cdr (assoc (expand-file-name file) flymake-list-only-diagnostics))))

(defun agent-test-agent-diagnostics (diagnostics)
  (vconcat (seq-filter (lambda (d) (equal (plist-get d :source) "agent-lsp")) diagnostics)))

(defun agent-test-eglot-flow (how)
  "C-u `agent-lsp-run-tests' from the test file (HOW `tests') or from calc.py (`source')."
  (let* ((calc-file (expand-file-name "calc.py" agent-test-root))
         (test-file (expand-file-name "tests/test_calc.py" agent-test-root))
         (server (progn (find-file (if (eq how 'tests) test-file calc-file))
                        (agent-test-eglot-start))))
    (agent-test-prompts)
    (agent-test-put "tests_answer" (agent-lsp-run-tests t))
    (if (eq how 'source)
        ;; tests/test_calc.py is not visited: eglot keeps its diagnostics for
        ;; `flymake-show-project-diagnostics' (`flymake-list-only-diagnostics').
        (agent-test-put
         "test_diagnostics"
         (agent-test-agent-diagnostics
          (agent-test-wait 90 "agent-lsp's diagnostic for the unvisited tests/test_calc.py"
                           (lambda () (agent-test-listed-diagnostics test-file)))))
      (with-current-buffer (find-file test-file)
        (agent-test-wait 90 "agent-lsp's diagnostic in tests/test_calc.py"
                         (lambda ()
                           (flymake-start)
                           (length> (agent-test-agent-diagnostics
                                     (agent-test-eglot-diagnostics))
                                    0)))
        (agent-test-put "test_diagnostics"
                        (agent-test-agent-diagnostics (agent-test-eglot-diagnostics)))))
    (when (eq how 'tests)
      (with-current-buffer (find-file test-file)
        (goto-char (point-min))
        (forward-line 8)
        (back-to-indentation)
        (agent-test-put "answer" (agent-lsp-fix)))
      (agent-test-put "outcome" (agent-test-wait 90 "the outcome message" #'agent-test-outcome))
      (agent-test-record-closed calc-file))
    (eglot-shutdown server nil 5)))

(defun agent-test-eglot-start ()
  (with-eval-after-load 'eglot
    (cl-defmethod eglot-handle-notification :before
      (_server (_method (eql window/showMessage)) &key message &allow-other-keys)
      (agent-test-note-message message)))
  (advice-add 'jsonrpc-connection-send :before
              (cl-function
               (lambda (_connection &key method params &allow-other-keys)
                 (let ((name (and method (agent-test-method-name method))))
                   (when (member name '("textDocument/codeAction" "workspace/executeCommand"))
                     (agent-test-push "requests" (list :method name :params params)))))))
  (apply #'eglot (eglot--guess-contact))
  (let ((server (agent-test-wait 30 "eglot to connect" #'eglot-current-server)))
    (agent-test-wait 30 "eglot to manage the buffer"
                     (lambda () (bound-and-true-p eglot--managed-mode)))
    (agent-test-put "server_command" (vconcat (process-command (jsonrpc--process server))))
    (agent-test-put "commands" (plist-get (plist-get (eglot--capabilities server)
                                                     :executeCommandProvider)
                                          :commands))
    server))

(defun agent-test-transcript-has (text)
  (with-current-buffer (get-buffer-create "*agent-lsp*")
    (save-excursion (goto-char (point-min)) (search-forward text nil t))))

(defun agent-test-eglot (how)
  (let* ((calc-file (expand-file-name "calc.py" agent-test-root))
         (calc (find-file calc-file))
         (server (agent-test-eglot-start)))
    (if (memq how '(task cancel))
        (agent-test-put "answer" (agent-lsp-run-task "make the failing test pass"))
      (flymake-start)
      (agent-test-wait 30 "pyflakes' diagnostic on line 10"
                       (lambda ()
                         (flymake-start)
                         (seq-find (lambda (d) (= (plist-get d :line) 10))
                                   (agent-test-eglot-diagnostics))))
      (agent-test-put "diagnostics" (vconcat (agent-test-eglot-diagnostics)))
      (goto-char (point-min))
      (forward-line 9)
      (search-forward "valuez")
      (agent-test-put "answer" (agent-lsp-fix)))
    (when (eq how 'cancel)
      (agent-test-wait 30 "the agent to ask the model"
                       (lambda () (agent-test-transcript-has "asking the model")))
      (agent-test-put "cancel_answer" (agent-lsp-cancel)))
    (agent-test-record-outcome calc calc-file)
    (when (eq how 'task)               ; nothing left to cancel
      (agent-test-put "cancel_answer" (agent-lsp-cancel)))
    (when (eq how 'fix)
      ;; pylsp sees the fixed text through the proxy and withdraws its diagnostic.
      (agent-test-wait 30 "the diagnostic to go away"
                       (lambda () (flymake-start)
                         (null (agent-test-eglot-diagnostics))))
      (agent-test-put "diagnostics_after" (vconcat (agent-test-eglot-diagnostics))))
    (eglot-shutdown server nil 5)))

;;;; lsp-mode

(defun agent-test-lsp-flow (how)
  "lsp-mode: C-u `agent-lsp-run-tests' from the test file (HOW `tests') or calc.py."
  (setq lsp-restart 'ignore)
  (advice-add 'lsp--window-show-message :before
              (lambda (_workspace params) (agent-test-note-message (gethash "message" params))))
  (agent-test-prompts)
  (lsp-workspace-folders-add (directory-file-name agent-test-root))
  (let* ((calc-file (expand-file-name "calc.py" agent-test-root))
         (test-file (expand-file-name "tests/test_calc.py" agent-test-root)))
    (with-current-buffer (find-file (if (eq how 'tests) test-file calc-file))
      (agent-test-wait 60 "lsp-mode to start pylsp and agent-lsp"
                       (lambda ()
                         (and (= (length (lsp-workspaces)) 2)
                              (seq-every-p (lambda (w)
                                             (eq (lsp--workspace-status w) 'initialized))
                                           (lsp-workspaces)))))
      (agent-test-put "tests_answer" (agent-lsp-run-tests t))
      (agent-test-wait 90 "agent-lsp's diagnostic for tests/test_calc.py"
                       (lambda () (gethash test-file (lsp-diagnostics))))
      (agent-test-put "test_diagnostics"
                      (vconcat (mapcar (lambda (d)
                                         (list :line (1+ (gethash "line" (gethash "start" (gethash "range" d))))
                                               :source (or (gethash "source" d) "")
                                               :message (gethash "message" d)))
                                       (gethash test-file (lsp-diagnostics)))))
      (when (eq how 'tests)
        (goto-char (point-min))
        (forward-line 8)
        (back-to-indentation)
        (agent-test-put "answer" (agent-lsp-fix))
        (agent-test-put "outcome"
                        (agent-test-wait 90 "the outcome message" #'agent-test-outcome))
        (agent-test-record-closed calc-file)))))

(defun agent-test-server-ids ()
  (vconcat (sort (mapcar (lambda (w) (symbol-name (lsp--client-server-id
                                                   (lsp--workspace-client w))))
                         (lsp-workspaces))
                 #'string<)))

(defun agent-test-lsp (how)
  (setq lsp-restart 'ignore)            ; no y-or-n-p (stdin) if a server exits
  (advice-add 'lsp--window-show-message :before
              (lambda (_workspace params) (agent-test-note-message (gethash "message" params))))
  (advice-add 'lsp-request-async :before
              (lambda (method params &rest _)
                (when (member method '("textDocument/codeAction" "workspace/executeCommand"))
                  (agent-test-push "requests"
                                   (list :method method :params params
                                         :servers (vconcat
                                                   (mapcar (lambda (w)
                                                             (symbol-name
                                                              (lsp--client-server-id
                                                               (lsp--workspace-client w))))
                                                           (lsp--find-workspaces-for method))))))))
  (lsp-workspace-folders-add (directory-file-name agent-test-root))
  (let* ((calc-file (expand-file-name "calc.py" agent-test-root))
         (test-file (expand-file-name "tests/test_calc.py" agent-test-root))
         (calc (find-file calc-file)))
    (agent-test-wait 30 "lsp-mode to start pylsp and agent-lsp"
                     (lambda ()
                       (and (= (length (lsp-workspaces)) 2)
                            (seq-every-p (lambda (w) (eq (lsp--workspace-status w) 'initialized))
                                         (lsp-workspaces)))))
    (agent-test-put "servers" (agent-test-server-ids))
    (agent-test-put "tests_answer" (agent-lsp-run-tests))
    (agent-test-wait 60 "the test run's report"
                     (lambda () (seq-find (lambda (m) (string-prefix-p "agent-lsp: tests: " m))
                                          (agent-test-get "messages"))))
    (agent-test-wait 10 "agent-lsp's diagnostic for tests/test_calc.py"
                     (lambda () (gethash test-file (lsp-diagnostics))))
    (with-current-buffer (find-file test-file)
      (agent-test-wait 30 "lsp-mode in tests/test_calc.py"
                       (lambda () (= (length (lsp-workspaces)) 2)))
      (agent-test-put "test_servers" (agent-test-server-ids))
      (goto-char (point-min))
      (forward-line 8)
      (agent-test-put "line_diagnostics" (vconcat (lsp-cur-line-diagnostics)))
      (if (eq how 'fix)
          (agent-test-put "answer" (agent-lsp-fix))
        ;; What the user picks in lsp-mode's menu of every server's actions.
        (let* ((actions (append (lsp-code-actions-at-point) nil))
               (titles (mapcar (lambda (a) (gethash "title" a)) actions)))
          (agent-test-put "menu" (vconcat titles))
          (lsp-execute-code-action
           (seq-find (lambda (a) (string-prefix-p "Ask agent to fix: " (gethash "title" a)))
                     actions)))))
    (agent-test-record-outcome calc calc-file)))

;;;; main

(condition-case err
    (progn
      (agent-test-put "mode" agent-test-mode)
      (pcase agent-test-mode
        ("eglot-fix" (agent-test-eglot 'fix))
        ("eglot-task" (agent-test-eglot 'task))
        ("eglot-cancel" (agent-test-eglot 'cancel))
        ("lsp-fix" (agent-test-lsp 'fix))
        ("lsp-menu" (agent-test-lsp 'menu))
        ((or "eglot-tests" "alone-tests" "missing-tests") (agent-test-eglot-flow 'tests))
        ((or "eglot-source" "alone-source") (agent-test-eglot-flow 'source))
        ("lsp-tests" (agent-test-lsp-flow 'tests))
        ("lsp-source" (agent-test-lsp-flow 'source))
        (_ (error "Unknown AGENT_EMACS_MODE %S" agent-test-mode)))
      (agent-test-put "ok" t)
      (agent-test-log "done")
      (agent-test-finish 0))
  (error
   (agent-test-put "ok" :json-false)
   (agent-test-put "error" (error-message-string err))
   (agent-test-log "error: %s" (error-message-string err))
   (agent-test-finish 1)))

;;; emacs_agent.el ends here

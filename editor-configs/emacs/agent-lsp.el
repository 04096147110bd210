;;; agent-lsp.el --- An AI coding agent through eglot or lsp-mode  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: tools, languages, convenience

;; This file is not part of GNU Emacs.

;;; Commentary:

;; agent-lsp is a coding agent served as a language server: it edits your
;; open buffers (unsaved) with `workspace/applyEdit', runs the tests and
;; reports with `window/showMessage'.  This package connects it to Emacs.
;;
;; eglot gives a buffer one server, so there agent-lsp runs in proxy mode:
;; `agent-lsp serve --wrap -- pylsp' runs your real language server behind
;; the agent, and eglot sees one server with both servers' features.  The
;; wrapped server must be installed (pylsp: pip install python-lsp-server);
;; when it is not, agent-lsp runs alone, with a warning.  Or run agent-lsp
;; alone from the start, with no other server:
;;
;;   (require 'agent-lsp)
;;   (agent-lsp-eglot-setup)             ; entries in `eglot-server-programs'
;;   (agent-lsp-eglot-setup 'standalone) ; or: agent-lsp alone
;;
;; lsp-mode runs several servers per buffer, so there agent-lsp is an
;; add-on server next to yours:
;;
;;   (agent-lsp-lsp-mode-setup)
;;
;; Commands: `agent-lsp-fix' (the diagnostic at point, no menu),
;; `agent-lsp-run-task', `agent-lsp-run-tests', `agent-lsp-cancel' and
;; `agent-lsp-show-log' (the agent's transcript).  The agent's code actions
;; ("Ask agent to fix: ...") are also in `eglot-code-actions' and
;; `lsp-execute-code-action'.  See README.md for the recommended settings
;; (reviewing the agent's edits with `eglot-confirm-server-edits').

;;; Code:

(require 'seq)
(require 'url-util)

(defgroup agent-lsp nil
  "An AI coding agent served as a language server."
  :group 'tools
  :prefix "agent-lsp-")

(defcustom agent-lsp-command '("agent-lsp" "serve")
  "Command line that starts the agent-lsp server on stdio."
  :type '(repeat string))

(defcustom agent-lsp-wrapped-servers '(((python-mode python-ts-mode) "pylsp"))
  "For eglot: the real language server agent-lsp wraps, per major mode.
Each element is (MODES . COMMAND): MODES is a major mode or a list
of them, COMMAND the real server's command line.  Used by
`agent-lsp-eglot-setup'."
  :type '(alist :key-type (choice symbol (repeat symbol))
                :value-type (repeat string)))

(defcustom agent-lsp-lsp-mode-major-modes '(python-mode python-ts-mode)
  "For lsp-mode: major modes in which agent-lsp runs as an add-on server."
  :type '(repeat symbol))

(defcustom agent-lsp-initialization-options nil
  "Settings for agent-lsp, sent as initializationOptions (a plist).
Keys are the settings' camelCase names, for example
\(:maxSteps 20 :editTimeout 60)."
  :type 'plist)

(defvar eglot-server-programs)
(defvar lsp--cur-workspace)
(declare-function eglot-current-server "eglot")
(declare-function eglot-code-actions "eglot")
(declare-function jsonrpc-request "jsonrpc")
(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp-request "lsp-mode")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp--workspace-client "lsp-mode")
(declare-function lsp--client-server-id "lsp-mode")
(declare-function lsp-cur-line-diagnostics "lsp-mode")
(declare-function lsp-text-document-identifier "lsp-mode")
(declare-function lsp-point-to-position "lsp-mode")
(declare-function lsp--window-log-message "lsp-mode")
(declare-function lsp--window-show-message "lsp-mode")

(defun agent-lsp--get (object key)
  "KEY (a keyword) of the JSON OBJECT, a plist or a hash table."
  (if (hash-table-p object)
      (gethash (substring (symbol-name key) 1) object)
    (and (listp object) (plist-get object key))))

(defun agent-lsp--log (message)
  "Append MESSAGE, when it is the agent's, to the `*agent-lsp*' buffer."
  (when (and (stringp message) (string-prefix-p "agent-lsp: " message))
    (with-current-buffer (get-buffer-create "*agent-lsp*")
      (unless (derived-mode-p 'special-mode) (special-mode))
      (let ((inhibit-read-only t))
        (save-excursion
          (goto-char (point-max))
          (insert (format-time-string "%H:%M:%S ") message "\n"))))))

;;;; Setup

;;;###autoload
(defun agent-lsp-eglot-setup (&optional standalone)
  "Make eglot run agent-lsp for the modes of `agent-lsp-wrapped-servers'.
By default in proxy mode: the agent wraps the real server of each
entry, and eglot's one connection gets both; a real server that is
not installed is left out, with a warning (agent-lsp then runs
alone).  With STANDALONE non-nil, agent-lsp runs alone in those modes,
without the real servers."
  (require 'eglot)
  (pcase-dolist (`(,modes . ,real) (reverse agent-lsp-wrapped-servers))
    (let ((entry (cons modes (if (or standalone (null real))
                                 (agent-lsp--eglot-command nil)
                               (agent-lsp--eglot-proxy real)))))
      (setq eglot-server-programs
            (cons entry (seq-remove (lambda (old) (equal (car old) modes))
                                    eglot-server-programs)))))
  (advice-add 'eglot-handle-notification :before #'agent-lsp--eglot-notification))

(defun agent-lsp--eglot-command (real)
  "eglot's contact: agent-lsp, wrapping the REAL server's command line if any."
  `(,@agent-lsp-command ,@(and real `("--wrap" "--" ,@real))
                        ,@(and agent-lsp-initialization-options
                               (list :initializationOptions
                                     agent-lsp-initialization-options))))

(defun agent-lsp--eglot-proxy (real)
  "eglot's contact for proxy mode in front of REAL, checked when eglot starts.
A function, so that a server installed later is found."
  (lambda (&optional _interactive)
    (if (executable-find (car real))
        (agent-lsp--eglot-command real)
      (display-warning
       'agent-lsp
       (format "`%s' (the server agent-lsp wraps for eglot) is not installed, so \
agent-lsp runs alone: install it (pylsp: pip install python-lsp-server), or \
change `agent-lsp-wrapped-servers', or use (agent-lsp-eglot-setup 'standalone)"
               (car real)))
      (agent-lsp--eglot-command nil))))

(defun agent-lsp--eglot-notification (_server method &rest params)
  "Log the agent's messages among the notifications (METHOD PARAMS) eglot gets."
  (when (memq method '(window/logMessage window/showMessage))
    (agent-lsp--log (plist-get params :message))))

;;;###autoload
(defun agent-lsp-lsp-mode-setup ()
  "Register agent-lsp with lsp-mode, as an add-on server.
It runs next to the other servers of `agent-lsp-lsp-mode-major-modes'."
  (require 'lsp-mode)
  (let ((notifications (make-hash-table :test 'equal))
        (actions (make-hash-table :test 'equal)))
    (dolist (handler '(("window/logMessage" . lsp--window-log-message)
                       ("window/showMessage" . lsp--window-show-message)))
      (puthash (car handler)
               (lambda (workspace params)
                 (agent-lsp--log (agent-lsp--get params :message))
                 (funcall (cdr handler) workspace params))
               notifications))
    ;; lsp-mode sends a code action's command to every server that takes
    ;; commands; these handlers send the agent's commands to agent-lsp only.
    (dolist (command '("agentLsp.fix" "agentLsp.cancel"))
      (puthash command
               (lambda (action)
                 (agent-lsp--report
                  (apply #'agent-lsp--execute command
                         (append (agent-lsp--get action :arguments) nil))))
               actions))
    (lsp-register-client
     (make-lsp-client
      :new-connection (lsp-stdio-connection (lambda () agent-lsp-command))
      :major-modes agent-lsp-lsp-mode-major-modes
      :add-on? t
      :server-id 'agent-lsp
      :initialization-options (lambda () agent-lsp-initialization-options)
      :notification-handlers notifications
      :action-handlers actions))))

;;;; Talking to agent-lsp through whichever client runs it in this buffer

(defun agent-lsp--client ()
  "(lsp . WORKSPACE) or (eglot . SERVER) of agent-lsp for this buffer."
  (let ((workspace
         (and (bound-and-true-p lsp-mode)
              (seq-find (lambda (w) (eq (lsp--client-server-id (lsp--workspace-client w))
                                        'agent-lsp))
                        (lsp-workspaces)))))
    (cond (workspace (cons 'lsp workspace))
          ((and (fboundp 'eglot-current-server) (eglot-current-server))
           (cons 'eglot (eglot-current-server)))
          (t (user-error "agent-lsp: not running for this buffer (see \
`agent-lsp-eglot-setup' and `agent-lsp-lsp-mode-setup')")))))

(defun agent-lsp--request (method params)
  "Send the request METHOD with PARAMS to agent-lsp; return the result."
  (pcase (agent-lsp--client)
    (`(lsp . ,workspace) (let ((lsp--cur-workspace workspace))
                           (lsp-request method params)))
    (`(eglot . ,server) (jsonrpc-request server (intern (concat ":" method)) params))))

(defun agent-lsp--execute (command &rest arguments)
  "Ask agent-lsp to run COMMAND with ARGUMENTS; return its answer."
  (agent-lsp--request "workspace/executeCommand"
                      (list :command command :arguments (vconcat arguments))))

(defun agent-lsp--report (answer)
  "Show the server's ANSWER to a command; return it."
  (let ((error (agent-lsp--get answer :error))
        (task (agent-lsp--get answer :taskId))
        (status (agent-lsp--get answer :status)))
    (cond (error (message "agent-lsp: %s" error))
          (task (message "agent-lsp: task %s started (M-x agent-lsp-show-log)" task))
          (status (message "agent-lsp: tests %s" status)))
    answer))

(defun agent-lsp--uri ()
  "The file: URI of this buffer's file."
  (unless buffer-file-name (user-error "agent-lsp: this buffer has no file"))
  (concat "file://" (url-hexify-string (expand-file-name buffer-file-name)
                                       url-path-allowed-chars)))

(defun agent-lsp--fixes ()
  "The agent's \"Ask agent to fix\" commands for this line, at point first."
  (let* ((beg (line-beginning-position)) (end (line-end-position))
         (actions
          (pcase (agent-lsp--client)
            (`(eglot . ,_) (eglot-code-actions beg end "quickfix"))
            (_ (agent-lsp--request
                "textDocument/codeAction"
                (list :textDocument (lsp-text-document-identifier)
                      :range (list :start (lsp-point-to-position beg)
                                   :end (lsp-point-to-position end))
                      :context (list :diagnostics (lsp-cur-line-diagnostics)
                                     :only ["quickfix"]))))))
         (commands (mapcar (lambda (action)   ; a CodeAction or a Command
                             (let ((command (agent-lsp--get action :command)))
                               (if (stringp command) action command)))
                           (append actions nil)))
         (column (current-column)))
    (seq-sort-by
     (lambda (command)
       (let ((range (agent-lsp--get (elt (agent-lsp--get command :arguments) 1) :range)))
         (if (<= (agent-lsp--get (agent-lsp--get range :start) :character)
                 column
                 (agent-lsp--get (agent-lsp--get range :end) :character))
             0 1)))
     #'<
     (seq-filter (lambda (command)
                   (equal (agent-lsp--get command :command) "agentLsp.fix"))
                 commands))))

;;;; Commands

;;;###autoload
(defun agent-lsp-fix (&optional diagnostic)
  "Ask the agent to fix the diagnostic at point, without a menu.
From Lisp, DIAGNOSTIC (an LSP Diagnostic, as a plist) is sent as is."
  (interactive)
  (agent-lsp--report
   (if diagnostic
       (agent-lsp--execute "agentLsp.fix" (agent-lsp--uri) diagnostic)
     (let ((fix (car (agent-lsp--fixes))))
       (unless fix (user-error "agent-lsp: no diagnostic on this line"))
       (apply #'agent-lsp--execute "agentLsp.fix"
              (append (agent-lsp--get fix :arguments) nil))))))

;;;###autoload
(defun agent-lsp-run-task (task)
  "Give the agent TASK, a request in plain words."
  (interactive "sAgent task: ")
  (agent-lsp--report (agent-lsp--execute "agentLsp.runTask" (list :task task))))

;;;###autoload
(defun agent-lsp-continue (hint)
  "Continue the agent's stopped task with HINT, its next message."
  (interactive "sHint for the stopped task: ")
  (agent-lsp--report (agent-lsp--execute "agentLsp.continue" (list :hint hint))))

;;;###autoload
(defun agent-lsp-steer (note)
  "Send NOTE to the agent's running task (taken at its next step)."
  (interactive "sNote for the running task: ")
  (agent-lsp--report (agent-lsp--execute "agentLsp.steer" (list :note note))))

;;;###autoload
(defun agent-lsp-answer (id words)
  "Answer in WORDS the agent's question ID (shown with the question).
A steer note never answers a question."
  (interactive "sQuestion id: \nsYour answer: ")
  (agent-lsp--report
   (agent-lsp--execute "agentLsp.answer" (list :questionId id :choice words))))

;;;###autoload
(defun agent-lsp-improve (request)
  "Ask the agent to improve its own setup for this project as REQUEST says.
When the patch is ready the server asks Apply / Show diff / Reject."
  (interactive "sImprove agent-lsp's setup: ")
  (agent-lsp--report
   (agent-lsp--execute "agentLsp.improve"
                       (append (list :request request)
                               (and buffer-file-name (list :uri (agent-lsp--uri)))))))

;;;###autoload
(defun agent-lsp-improve-list ()
  "Show the improvements of this project with their ids."
  (interactive)
  (let* ((answer (agent-lsp--execute "agentLsp.improveList"))
         (records (append (agent-lsp--get answer :improvements) nil)))
    (message "%s"
             (if records
                 (mapconcat
                  (lambda (r)
                    (format "%s  %s  %s"
                            (agent-lsp--get r :id)
                            (if (stringp (agent-lsp--get r :reverted)) "reverted" "applied")
                            (agent-lsp--get (agent-lsp--get r :patch) :summary)))
                  records "\n")
               "agent-lsp: no improvements yet"))
    answer))

;;;###autoload
(defun agent-lsp-improve-revert (id)
  "Revert the improvement ID (see `agent-lsp-improve-list')."
  (interactive "sRevert improvement (id): ")
  (agent-lsp--report (agent-lsp--execute "agentLsp.improveRevert" (list :id id))))

;;;###autoload
(defun agent-lsp-run-tests (&optional this-file)
  "Run the project's test suite; failures become diagnostics.
With a prefix argument THIS-FILE, run the tests in this file only."
  (interactive "P")
  (agent-lsp--report
   (if this-file
       (agent-lsp--execute "agentLsp.runTests" (list :uri (agent-lsp--uri)))
     (agent-lsp--execute "agentLsp.runTests"))))

;;;###autoload
(defun agent-lsp-cancel ()
  "Stop the agent's running task."
  (interactive)
  (let ((answer (agent-lsp--execute "agentLsp.cancel")))
    (message (if (eq (agent-lsp--get answer :cancelled) t)
                 "agent-lsp: cancelling the task"
               "agent-lsp: no task is running"))
    answer))

;;;###autoload
(defun agent-lsp-show-log ()
  "Show the agent's transcript, the `*agent-lsp*' buffer."
  (interactive)
  (let ((buffer (get-buffer-create "*agent-lsp*")))
    (when (= (buffer-size buffer) 0)
      (message "agent-lsp: nothing from the agent yet"))
    (with-current-buffer buffer (goto-char (point-max)))
    (display-buffer buffer)
    buffer))

(provide 'agent-lsp)
;;; agent-lsp.el ends here

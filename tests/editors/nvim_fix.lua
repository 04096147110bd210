-- Driver for tests/editors/test_neovim.py, run with `-c "lua dofile(...)"` after an init file
-- that set up agent-lsp as a user would (the plugin's setup(), or Neovim's own vim.lsp.config +
-- vim.lsp.enable). The file given on the command line is the current buffer.
--
-- AGENT_NVIM_MODE:
--   fix          another "linter" puts a diagnostic on line 10 of calc.py, the cursor goes
--                there, :AgentFix runs.
--   task         :AgentTask make the failing test pass.
--   taskrange    :8,10AgentTask make the failing test pass (lines 8-10 of calc.py selected).
--   tests        in tests/test_calc.py: :AgentTests, wait for the failure's diagnostic, then
--                :AgentFix on it; the fix lands in calc.py, a file that is not open.
--   tests-source in calc.py: :AgentTests; wait for the failure's diagnostic in the test file.
--   native       Neovim's own client only (no plugin): agentLsp.runTests, then the "Ask agent
--                to fix" code action of vim.lsp.buf.code_action() in tests/test_calc.py.
--   none         record which clients started, then :AgentFix (setup({filetypes = {}})).
--   screen       a real UI (tmux): :AgentTask, then record and stay open; the test reads the
--                screen and quits.
-- Then: wait for "agent-lsp: completed", record what the user saw into the JSON file
-- AGENT_NVIM_RESULT, :write, quit. Always exits: 0 on success, 1 on failure, 2 on watchdog.
local result_path = assert(os.getenv("AGENT_NVIM_RESULT"), "AGENT_NVIM_RESULT is not set")
local mode = os.getenv("AGENT_NVIM_MODE") or "fix"
local seen = {
  mode = mode, version = tostring(vim.version().major) .. "." .. tostring(vim.version().minor),
  progress = {}, statuses = {}, notifications = {}, edits = {}, requests = {},
}
local uv = vim.uv or vim.loop

local function log(message)
  io.stderr:write("[nvim_fix] " .. message .. "\n")
end

local function save()
  local file = assert(io.open(result_path, "w"))
  file:write(vim.fn.json_encode(seen))
  file:close()
end

local function read_file(path)
  local file = assert(io.open(path, "r"))
  local text = file:read("*a")
  file:close()
  return text
end

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
end

local function wait(ms, what, predicate)
  if not vim.wait(ms, predicate, 20) then
    error("timed out after " .. ms .. " ms waiting for " .. what)
  end
end

local function all_clients()
  return (vim.lsp.get_clients or vim.lsp.get_active_clients)()
end

-- Watchdog: whatever happens, this Neovim exits.
vim.defer_fn(function()
  seen.error = "watchdog: the driver did not finish in time"
  pcall(save)
  vim.cmd("cquit 2")
end, 110000)

-- Every deprecated call the plugin makes, shown or not (what :checkhealth vim.deprecated lists;
-- Neovim warns only for the ones near removal).
seen.deprecated = {}
local default_deprecate = vim.deprecate
vim.deprecate = function(name, ...)
  if debug.traceback():find("agent_lsp/", 1, true) then
    table.insert(seen.deprecated, name)
  end
  return default_deprecate(name, ...)
end

-- Headless: nothing may wait for a keypress (the default uses inputlist()).
vim.lsp.handlers["window/showMessageRequest"] = function(_, params)
  log("showMessageRequest (answered: none): " .. tostring(params and params.message))
  return vim.NIL
end

-- Observe through the global handlers and vim.notify: the plugin's per-client handlers
-- must chain to them (progress) or use vim.notify (messages).
local default_progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  table.insert(seen.progress, { token = result.token, value = vim.deepcopy(result.value) })
  local ok, plugin = pcall(require, "agent_lsp")
  table.insert(seen.statuses, ok and plugin.status() or "")
  return default_progress(err, result, ctx, config)
end

local default_notify = vim.notify
vim.notify = function(message, level, opts)
  log("notify [" .. tostring(level) .. "] " .. tostring(message))
  table.insert(seen.notifications, { message = message, level = level })
  return default_notify(message, level, opts)
end

local default_apply_edit = vim.lsp.handlers["workspace/applyEdit"]
vim.lsp.handlers["workspace/applyEdit"] = function(err, params, ctx, config)
  local response = default_apply_edit(err, params, ctx, config)
  local change = (params.edit.documentChanges or {})[1]
  local uri = next(params.edit.changes or {}) or (change and change.textDocument.uri)
  local bufnr = uri and vim.fn.bufnr(vim.uri_to_fname(uri)) or -1
  table.insert(seen.edits, {
    label = params.label,
    applied = response.applied,
    modified = bufnr > 0 and vim.bo[bufnr].modified,
  })
  return response
end

-- The outcome ("agent-lsp: completed: ...", with or without Neovim's "LSP[name] " prefix).
local function outcome()
  for _, n in ipairs(seen.notifications) do
    local status = type(n.message) == "string" and n.message:match("agent%-lsp: (%a+): ")
    if status == "completed" or status == "failed" or status == "error" or status == "cancelled" then
      return n.message
    end
  end
end

-- The agent-lsp client of the buffer, however it was started (setup() names it "agent-lsp",
-- vim.lsp.config "agent_lsp").
local function agent_client(bufnr)
  for _, c in ipairs(all_clients()) do
    if (c.name == "agent-lsp" or c.name == "agent_lsp") and c.initialized
      and vim.lsp.buf_is_attached(bufnr, c.id) then
      return c
    end
  end
end

-- Record the requests (method + params) sent to the server: client.request(method, ...)
-- before 0.11, client:request(method, ...) after.
local function record_requests(client)
  local request = client.request
  client.request = function(...)
    local args = { ... }
    local at = type(args[1]) == "table" and 2 or 1
    table.insert(seen.requests, { method = args[at], params = args[at + 1] })
    return request(...)
  end
end

local function floats()
  local texts = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      table.insert(texts, buffer_text(vim.api.nvim_win_get_buf(win)))
    end
  end
  return texts
end

local function messages()
  return vim.api.nvim_exec("messages", true)
end

local function diagnostics_of(bufnr)
  return vim.tbl_map(function(d)
    return { lnum = d.lnum, col = d.col, source = d.source, message = d.message }
  end, vim.diagnostic.get(bufnr))
end

local function agent_diagnostics(bufnr)
  return vim.tbl_filter(function(d) return d.source == "agent-lsp" end, diagnostics_of(bufnr))
end

local function record_calc(calc_path)
  local calc = vim.fn.bufnr(calc_path)
  seen.calc_loaded = calc > 0 and vim.api.nvim_buf_is_loaded(calc)
  seen.calc_listed = calc > 0 and vim.bo[calc].buflisted
  seen.buffer = seen.calc_loaded and buffer_text(calc) or vim.NIL
  seen.disk_before_write = read_file(calc_path)
  seen.modified_before_write = seen.calc_loaded and vim.bo[calc].modified
  return calc
end

local function finish_outcome()
  wait(90000, "the outcome message", function() return outcome() ~= nil end)
  seen.outcome = outcome()
  local ok, plugin = pcall(require, "agent_lsp")
  seen.status_after = ok and plugin.status() or ""
  seen.floats = floats()
  assert(seen.outcome:match("agent%-lsp: completed: "), seen.outcome)
end

local function main()
  local also = os.getenv("AGENT_NVIM_OPEN") -- a file opened first, then left hidden
  if also and also ~= "" then
    local current = vim.api.nvim_get_current_buf()
    vim.cmd("edit " .. vim.fn.fnameescape(also))
    vim.cmd("buffer " .. current)
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = uv.cwd()
  local calc_path = root .. "/calc.py"
  local test_path = root .. "/tests/test_calc.py"
  assert(vim.bo.filetype == "python", "filetype: " .. vim.bo.filetype)

  if mode == "none" then
    -- A FileType autocmd creates its client at once (listed by get_clients() only once
    -- initialized; get_client_by_id() has it from the start): what started is known right away.
    seen.clients = {}
    for id = 1, 20 do
      local c = vim.lsp.get_client_by_id(id)
      if c then table.insert(seen.clients, c.name) end
    end
    seen.commands = vim.fn.exists(":AgentFix") == 2
    vim.cmd("AgentFix")
    return
  end

  local client
  wait(60000, "agent-lsp to attach and initialize", function()
    client = agent_client(bufnr)
    return client ~= nil
  end)
  seen.client_name = client.name
  seen.offset_encoding = client.offset_encoding
  record_requests(client)

  if mode == "fix" then
    assert(path == calc_path, "expected calc.py, got " .. path)
    -- Two other "linters" report on line 10 (0-based 9); the cursor sits on the first one.
    local pytest = vim.api.nvim_create_namespace("fake-pytest")
    local ruff = vim.api.nvim_create_namespace("fake-ruff")
    vim.diagnostic.set(ruff, bufnr, { {
      lnum = 9, col = 0, end_lnum = 9, end_col = 3, source = "ruff",
      severity = vim.diagnostic.severity.HINT, message = "E111 indentation",
    } })
    vim.diagnostic.set(pytest, bufnr, { {
      lnum = 9, col = 4, end_lnum = 9, end_col = 42, source = "pytest",
      severity = vim.diagnostic.severity.ERROR,
      message = "average([2, 4, 6]) returned 3.0, expected 4",
    } })
    vim.api.nvim_win_set_cursor(0, { 10, 11 })
    vim.cmd("AgentFix")
  elseif mode == "task" then
    vim.cmd("AgentTask make the failing test pass")
  elseif mode == "taskrange" then
    vim.cmd("8,10AgentTask make the failing test pass")
  elseif mode == "tests-source" then
    assert(path == calc_path, "expected calc.py, got " .. path)
    vim.cmd("AgentTests")
    local test_buf = vim.uri_to_bufnr(vim.uri_from_fname(test_path))
    wait(90000, "agent-lsp's diagnostic in tests/test_calc.py", function()
      return #agent_diagnostics(test_buf) > 0
    end)
    seen.test_diagnostics = agent_diagnostics(test_buf)
    seen.calc_diagnostics = agent_diagnostics(bufnr)
    return
  elseif mode == "tests" or mode == "native" then
    assert(path == test_path, "expected tests/test_calc.py, got " .. path)
    if mode == "tests" then
      vim.cmd("AgentTests")
    else
      client:exec_cmd({ title = "run tests", command = "agentLsp.runTests", arguments = { vim.empty_dict() } })
    end
    wait(90000, "agent-lsp's diagnostic for the failing test", function()
      return #agent_diagnostics(bufnr) > 0
    end)
    seen.test_diagnostics = agent_diagnostics(bufnr)
    local failure = seen.test_diagnostics[1]
    vim.api.nvim_win_set_cursor(0, { failure.lnum + 1, failure.col })
    if mode == "tests" then
      vim.cmd("AgentFix")
    else
      vim.lsp.buf.code_action({
        apply = true,
        filter = function(action) return action.title:find("^Ask agent to fix: ") ~= nil end,
      })
    end
    finish_outcome()
    local calc = record_calc(calc_path)
    seen.messages = messages()
    if seen.calc_loaded then
      vim.api.nvim_buf_call(calc, function() vim.cmd("write") end)
      seen.modified_after_write = vim.bo[calc].modified
    end
    return
  elseif mode == "screen" then
    -- A real UI: nothing may block the event loop, so the rest runs from a timer.
    vim.cmd("AgentTask make the failing test pass")
    local timer = uv.new_timer()
    timer:start(200, 200, vim.schedule_wrap(function()
      if not outcome() or seen.outcome then return end
      timer:stop()
      seen.outcome = outcome()
      seen.floats = floats()
      seen.buffer = buffer_text(bufnr)
      seen.ok = true
      save()
    end))
    return "stay"
  end

  finish_outcome()
  seen.buffer = buffer_text(bufnr)
  seen.disk_before_write = read_file(path)
  seen.modified_before_write = vim.bo[bufnr].modified
  seen.messages = messages()
  vim.cmd("write")
  seen.modified_after_write = vim.bo[bufnr].modified
end

local ok, err = xpcall(main, debug.traceback)
if ok and err == "stay" then
  return
end
seen.ok = ok
seen.messages = seen.messages or messages()
if not ok then
  seen.error = tostring(err)
  log(seen.error)
end
local saved, save_err = pcall(save)
if not saved then
  log("could not write the result: " .. tostring(save_err))
end
vim.cmd((ok and saved) and "qall!" or "cquit 1")

-- Driver for tests/editors/test_neovim.py, run with `-c "lua dofile(...)"` after an init file
-- that set up the shipped plugin as a user would. calc.py is the current buffer.
--
-- AGENT_NVIM_MODE=fix: another "linter" puts a diagnostic on line 10, the cursor goes there,
-- :AgentFix runs. AGENT_NVIM_MODE=task: :AgentTask make the failing test pass.
-- Then: wait for "agent-lsp: completed", record what the user saw into the JSON file
-- AGENT_NVIM_RESULT, :write, quit. Always exits: 0 on success, 1 on failure, 2 on watchdog.
local result_path = assert(os.getenv("AGENT_NVIM_RESULT"), "AGENT_NVIM_RESULT is not set")
local mode = os.getenv("AGENT_NVIM_MODE") or "fix"
local seen = { mode = mode, progress = {}, statuses = {}, notifications = {}, edits = {}, requests = {} }

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

-- Watchdog: whatever happens, this Neovim exits.
vim.defer_fn(function()
  seen.error = "watchdog: the driver did not finish in time"
  pcall(save)
  vim.cmd("cquit 2")
end, 80000)

-- Headless: nothing may wait for a keypress (the default uses inputlist()).
vim.lsp.handlers["window/showMessageRequest"] = function(_, params)
  log("showMessageRequest (answered: none): " .. tostring(params and params.message))
  return vim.NIL
end

-- Observe through the global handlers and vim.notify: the plugin's per-client handlers
-- must chain to them (progress) or use vim.notify (messages).
local default_progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  table.insert(seen.progress, { token = result.token, value = result.value })
  table.insert(seen.statuses, require("agent_lsp").status())
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

local function outcome()
  for _, n in ipairs(seen.notifications) do
    local status = type(n.message) == "string" and n.message:match("^agent%-lsp: (%a+): ")
    if status == "completed" or status == "failed" or status == "error" or status == "cancelled" then
      return n.message
    end
  end
end

local function main()
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  assert(path:match("calc%.py$"), "expected calc.py, got " .. path)
  assert(vim.bo.filetype == "python", "filetype: " .. vim.bo.filetype)
  local client
  wait(30000, "agent-lsp to attach and initialize", function()
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if c.name == "agent-lsp" and c.initialized then
        client = c
        return true
      end
    end
    return false
  end)
  -- Record the plugin's requests (method + params) on the way out.
  local request = client.request
  client.request = function(method, params, ...)
    table.insert(seen.requests, { method = method, params = params })
    return request(method, params, ...)
  end

  if mode == "fix" then
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
  else
    vim.cmd("AgentTask make the failing test pass")
  end

  wait(60000, "the outcome message", function() return outcome() ~= nil end)
  seen.outcome = outcome()
  seen.status_after = require("agent_lsp").status()
  seen.buffer = buffer_text(bufnr)
  seen.disk_before_write = read_file(path)
  seen.modified_before_write = vim.bo[bufnr].modified
  assert(seen.outcome:match("^agent%-lsp: completed: "), seen.outcome)
  vim.cmd("write")
  seen.modified_after_write = vim.bo[bufnr].modified
end

local ok, err = xpcall(main, debug.traceback)
seen.ok = ok
if not ok then
  seen.error = tostring(err)
  log(seen.error)
end
local saved, save_err = pcall(save)
if not saved then
  log("could not write the result: " .. tostring(save_err))
end
vim.cmd((ok and saved) and "qall!" or "cquit 1")

-- agent-lsp for Neovim 0.7+: one agent-lsp client per project root, :AgentFix, :AgentTask {text},
-- :AgentCancel, :AgentTests, :AgentLog, and status() for a statusline.
--
--   require("agent_lsp").setup({ cmd = { "agent-lsp", "serve" }, filetypes = { "python" } })
--
-- setup() keys other than filetypes / root_markers / notify go to the LSP client config
-- (cmd, init_options, settings, on_attach, capabilities, handlers, flags, ...).
-- The commands work with any agent-lsp client, also one started without setup() (Neovim 0.11+:
-- vim.lsp.config + vim.lsp.enable); plugin/agent_lsp.lua defines them when this is on
-- 'runtimepath'.
local M = {}

local FIX_PREFIX = "Ask agent to fix: " -- title prefix of the server's code actions
local levels = vim.log.levels
local options = {
  filetypes = { "python", "javascript", "typescript", "javascriptreact", "typescriptreact", "go" },
  root_markers = { ".agent-lsp", "pyproject.toml", "setup.py", "package.json", "go.mod", ".git" },
  notify = true, -- show the server's window/showMessage through vim.notify
}
local client_config = {
  name = "agent-lsp",
  cmd = { "agent-lsp", "serve" },
  flags = { debounce_text_changes = 0 }, -- the agent must see buffer edits at once
}
local clients = {} -- root dir -> client id
local progress = {} -- our running $/progress tokens -> latest text

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

-- Whether `text` is one line that fits the message area (v:echospace). A longer message would
-- wrap into Neovim's "Press ENTER" prompt.
local function fits(text)
  return not text:find("\n") and vim.fn.strdisplaywidth(text) <= vim.v.echospace
end

-- The first line of `text`, cut to fit the message area, ending in "...".
local function one_line(text)
  local width = math.max(vim.v.echospace, 10) - 3
  local line = vim.fn.strcharpart(text:match("^[^\n]*"), 0, width)
  while vim.fn.strdisplaywidth(line) > width do
    line = vim.fn.strcharpart(line, 0, vim.fn.strchars(line) - 1)
  end
  return line .. "..."
end

-- The whole of a message that did not fit: a float above the message area, closed by the next
-- cursor move or mode change.
local float = nil
local function show_whole(text)
  if float and vim.api.nvim_win_is_valid(float) then
    pcall(vim.api.nvim_win_close, float, true)
  end
  local lines = vim.split(text, "\n", { plain = true })
  local width = 1
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.max(1, math.min(width, vim.o.columns - 4))
  local height = 0
  for _, line in ipairs(lines) do
    height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = "editor", anchor = "SE", style = "minimal", border = "single", focusable = false,
    row = math.max(1, vim.o.lines - vim.o.cmdheight - 1), col = vim.o.columns,
    width = width, height = math.max(1, math.min(height, vim.o.lines - vim.o.cmdheight - 3)),
  })
  if not ok then return end
  float = win
  vim.wo[win].wrap = true
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI", "InsertEnter", "CmdlineEnter" }, {
    once = true,
    callback = function()
      if vim.api.nvim_win_is_valid(win) then pcall(vim.api.nvim_win_close, win, true) end
    end,
  })
end

-- Always one line that fits; a longer message shows whole in a float.
local function notify(message, level)
  message = tostring(message)
  if fits(message) then
    return vim.notify(message, level or levels.INFO, { title = "agent-lsp" })
  end
  vim.notify(one_line(message), level or levels.INFO, { title = "agent-lsp" })
  show_whole(message)
end

-- `client:request()` from 0.11 on, `client.request()` before.
local function request(client, method, params, handler, bufnr)
  if has("0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

-- The handler that runs without us: the user's per-client one, else the global one (looked
-- up at call time), so we wrap rather than replace what the user configured.
local function previous(method)
  return (client_config.handlers or {})[method] or vim.lsp.handlers[method]
end

-- Progress text for a statusline: 'edit_file {"path": "calc.py", ...}' -> "editing calc.py";
-- tool results ("edit_file: success ...") and "started: ..." keep the previous text (nil).
local verbs = {
  read_file = "reading", edit_file = "editing", write_file = "writing", list_files = "listing",
  search_text = "searching", find_symbol = "looking up", run_tests = "running tests",
  run_command = "running a command", git_status = "git status", git_diff = "git diff",
  get_diagnostics = "reading diagnostics", remember = "remembering", update_task = "taking notes",
}
local function describe(message)
  local tool, args = message:match("^([%w_]+) ({.*)")
  if tool then
    local path = args:match('"path":%s*"([^"]*)"')
    return (verbs[tool] or tool) .. (path and (" " .. path) or "")
  end
  local head = message:match("^([%w_]+): ")
  return not (head and (verbs[head] or head == "started")) and message or nil
end

local function on_progress(err, result, ctx, config)
  local token, value = result and result.token, result and result.value
  if type(token) == "string" and token:find("^agent%-lsp/") and type(value) == "table" then
    if value.kind == "begin" then
      progress[token] = value.message or value.title
    elseif value.kind == "report" and progress[token] then
      progress[token] = describe(value.message or "") or progress[token]
    elseif value.kind == "end" then
      progress[token] = nil
    end
    pcall(vim.cmd, "redrawstatus")
  end
  local handler = previous("$/progress") -- keeps client.messages, LspProgressUpdate, fidget...
  return handler and handler(err, result, ctx, config)
end

local function on_show_message(err, result, ctx, config)
  if not (options.notify and result) then
    return previous("window/showMessage")(err, result, ctx, config)
  end
  notify(result.message, ({ levels.ERROR, levels.WARN, levels.INFO, levels.DEBUG })[result.type])
end

--- Statusline text: "agent: editing calc.py" while a task runs, "" otherwise.
function M.status()
  local _, text = next(progress)
  return text and ("agent: " .. (#text > 60 and (text:sub(1, 57) .. "...") or text)) or ""
end

-- An agent-lsp client, however it was started (setup(), vim.lsp.enable, a plugin manager):
-- by its name, else by the commands it serves (proxy mode too).
local function is_agent(client)
  if client.name == client_config.name or client.name == "agent_lsp" then
    return true
  end
  local provider = (client.server_capabilities or {}).executeCommandProvider
  return type(provider) == "table" and vim.tbl_contains(provider.commands or {}, "agentLsp.runTask")
end

-- The initialized agent-lsp client of the buffer, else of any buffer, else nil (with a notice).
local function client_for(bufnr)
  local fallback
  for _, client in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if client.initialized and is_agent(client) then
      if vim.lsp.buf_is_attached(bufnr, client.id) then
        return client
      end
      fallback = fallback or client
    end
  end
  if not fallback then
    notify("agent-lsp: no server ready (open a file of a configured filetype)", levels.WARN)
  end
  return fallback
end

local function execute(client, command, arguments, bufnr)
  local params = { command = command, arguments = arguments }
  request(client, "workspace/executeCommand", params, function(err, result)
    result = type(result) == "table" and result or {}
    if err then
      notify("agent-lsp: " .. tostring(err.message), levels.ERROR)
    elseif result.taskId then -- a refusal ({error = ...}) is shown by the server itself
      notify(("agent-lsp: task %s started (:AgentCancel stops it)"):format(result.taskId))
    elseif result.cancelled == false then
      notify("agent-lsp: no task to cancel")
    elseif command == "agentLsp.showLog" and result.path then
      vim.cmd("split " .. vim.fn.fnameescape(result.path)) -- the session log, JSON lines
    elseif command == "agentLsp.improveList" and result.improvements then
      local lines = {}
      for _, r in ipairs(result.improvements) do
        local state = r.reverted and ("reverted " .. r.reverted) or "applied"
        table.insert(lines, ("%s  %s  %s  (%s)"):format(r.id, state, r.patch.summary, r.request))
      end
      notify(#lines > 0 and table.concat(lines, "\n") or "agent-lsp: no improvements yet")
    end
  end, bufnr)
end

-- vim.diagnostic item (any namespace, byte columns) -> LSP Diagnostic in the client's encoding.
local function to_lsp(bufnr, d, encoding)
  local function position(lnum, col)
    local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ""
    col = math.min(col or 0, #line)
    if encoding ~= "utf-8" and has("0.11") then -- str_utfindex(s, index) is deprecated there
      col = vim.str_utfindex(line, encoding == "utf-32" and "utf-32" or "utf-16", col, false)
    elseif encoding ~= "utf-8" then
      local utf32, utf16 = vim.str_utfindex(line, col)
      col = encoding == "utf-32" and utf32 or utf16
    end
    return { line = lnum, character = col }
  end
  local range = { start = position(d.lnum, d.col) }
  range["end"] = position(d.end_lnum or d.lnum, d.end_col or d.col)
  return vim.tbl_extend("force", (d.user_data and d.user_data.lsp) or {}, {
    range = range,
    severity = d.severity, message = d.message, source = d.source, code = d.code,
  })
end

--- :AgentFix: run "Ask agent to fix" for the diagnostic under the cursor (no menu). The
--- request carries every diagnostic on the line, from every namespace (Neovim itself would
--- send only this server's own), the one under the cursor first, then by severity.
function M.fix()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local diagnostics = vim.diagnostic.get(bufnr, { lnum = row - 1 })
  if not client then return end
  if #diagnostics == 0 then return notify("agent-lsp: no diagnostic on this line", levels.WARN) end
  local function rank(d)
    local under = d.col <= col and ((d.end_lnum or d.lnum) > d.lnum or col <= (d.end_col or d.col))
    return (under and 0 or 10) + (d.severity or 4)
  end
  table.sort(diagnostics, function(a, b) return rank(a) < rank(b) end)
  local lsp_diagnostics = vim.tbl_map(function(d)
    return to_lsp(bufnr, d, client.offset_encoding)
  end, diagnostics)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = lsp_diagnostics[1].range,
    context = { diagnostics = lsp_diagnostics, only = { "quickfix" } },
  }
  request(client, "textDocument/codeAction", params, function(err, actions)
    for _, action in ipairs((not err and actions) or {}) do
      -- A CodeAction carries its Command; a bare Command is its own.
      local command = type(action.command) == "table" and action.command or action
      if action.title:sub(1, #FIX_PREFIX) == FIX_PREFIX and type(command.command) == "string" then
        return execute(client, command.command, command.arguments, bufnr)
      end
    end
    notify("agent-lsp: no fix action offered" .. (err and (": " .. err.message) or ""), levels.WARN)
  end, bufnr)
end

local function run(command, arguments)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  return client and execute(client, command, arguments, bufnr)
end

--- :AgentTask {text}: a free-text task; with a range (:'<,'>AgentTask {text}) the task sees
--- those lines of the current buffer as the selection, without one the cursor's line.
--- :AgentCancel: stop the running task, whichever it is.
function M.task(text, line1, line2)
  local args = { task = text }
  if vim.api.nvim_buf_get_name(0) == "" or vim.bo.buftype ~= "" then
    -- not a file: nothing to point at
  elseif line1 ~= nil and line2 ~= nil then
    args.uri = vim.uri_from_bufnr(0)
    args.range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } }
  else
    args.uri = vim.uri_from_bufnr(0)
    local row = math.max(vim.api.nvim_win_get_cursor(0)[1] - 1, 0)
    args.range = { start = { line = row, character = 0 }, ["end"] = { line = row, character = 0 } }
  end
  run("agentLsp.runTask", { args })
end
function M.cancel() run("agentLsp.cancel", nil) end
--- :AgentTests: the project's tests (failures become diagnostics). :AgentLog: the session log.
function M.tests() run("agentLsp.runTests", { { uri = vim.uri_from_bufnr(0) } }) end
function M.log() run("agentLsp.showLog", { {} }) end
--- :AgentContinue {hint}: the stopped task goes on, the hint its next message.
--- :AgentSteer {note}: a note for the running task, taken at its next step.
function M.continue_task(hint) run("agentLsp.continue", { { hint = hint } }) end
function M.steer(note) run("agentLsp.steer", { { note = note } }) end
--- :AgentAnswer {id} {words}: answer in words the agent's question {id} (shown with it); a
--- steer note never answers a question.
function M.answer(id, words)
  run("agentLsp.answer", { { questionId = id, choice = words } })
end
--- :AgentImprove {request}: the agent proposes a change to its own setup for the project
--- (Apply / Show diff / Reject when ready). :AgentImproveList, :AgentImproveRevert {id}.
function M.improve(request)
  run("agentLsp.improve", { { request = request, uri = vim.uri_from_bufnr(0) } })
end
function M.improve_list() run("agentLsp.improveList", { {} }) end
function M.improve_revert(id) run("agentLsp.improveRevert", { { id = id } }) end

-- Nearest directory upwards holding a root marker; else the file's own directory.
local function find_root(path)
  local start = vim.fn.fnamemodify(path, ":p:h")
  local dir, parent = start, nil
  repeat
    for _, marker in ipairs(options.root_markers) do
      if (vim.uv or vim.loop).fs_stat(dir .. "/" .. marker) then return dir end
    end
    parent, dir = dir, vim.fn.fnamemodify(dir, ":h")
  until dir == parent
  return start
end

-- Attach a buffer to the client of its root, starting that client if needed.
local function attach(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == "" or vim.bo[bufnr].buftype ~= "" then return end
  local root = find_root(path)
  local config = vim.tbl_deep_extend("force", client_config, { root_dir = root })
  config.handlers = vim.tbl_extend("force", config.handlers or {}, {
    ["$/progress"] = on_progress,
    ["window/showMessage"] = on_show_message,
  })
  if vim.lsp.start then -- 0.8+: reuses the client with the same name and root itself
    clients[root] = vim.lsp.start(config, { bufnr = bufnr }) or clients[root]
    return
  end
  local client = clients[root] and vim.lsp.get_client_by_id(clients[root])
  if not client or client.is_stopped() then
    clients[root] = vim.lsp.start_client(config)
  end
  return clients[root] and vim.lsp.buf_attach_client(bufnr, clients[root])
end

--- The commands, and (0.8+) progress and messages for agent-lsp clients started without setup().
--- Run by plugin/agent_lsp.lua and by setup(); running it again changes nothing.
function M.commands()
  if has("0.8") then
    vim.api.nvim_create_autocmd("LspAttach", {
      group = vim.api.nvim_create_augroup("agent_lsp_attach", { clear = true }),
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data and args.data.client_id or -1)
        if client and is_agent(client) and type(client.handlers) == "table" then
          client.handlers["$/progress"] = client.handlers["$/progress"] or on_progress
          client.handlers["window/showMessage"] = client.handlers["window/showMessage"]
            or on_show_message
        end
      end,
    })
  end
  local command = vim.api.nvim_create_user_command
  command("AgentFix", function() M.fix() end, { desc = "agent-lsp: fix the diagnostic here" })
  command("AgentTask", function(a)
    if a.range > 0 then M.task(a.args, a.line1, a.line2) else M.task(a.args) end
  end, { nargs = "+", range = true, desc = "agent-lsp: a task (with a range: about those lines)" })
  command("AgentCancel", function() M.cancel() end, { desc = "agent-lsp: cancel the task" })
  command("AgentTests", function() M.tests() end, { desc = "agent-lsp: run the tests" })
  command("AgentLog", function() M.log() end, { desc = "agent-lsp: open the session log" })
  command("AgentContinue", function(a) M.continue_task(a.args) end,
    { nargs = "+", desc = "agent-lsp: continue the stopped task with a hint" })
  command("AgentSteer", function(a) M.steer(a.args) end,
    { nargs = "+", desc = "agent-lsp: a note for the running task" })
  command("AgentAnswer", function(a)
    local id, words = a.args:match("^(%S+)%s+(.+)$")
    if id then M.answer(id, words) end
  end, { nargs = "+", desc = "agent-lsp: answer the agent's question {id} in words" })
  command("AgentImprove", function(a) M.improve(a.args) end,
    { nargs = "+", desc = "agent-lsp: improve its own setup for this project" })
  command("AgentImproveList", function() M.improve_list() end,
    { desc = "agent-lsp: the improvements applied here" })
  command("AgentImproveRevert", function(a) M.improve_revert(a.args) end,
    { nargs = 1, desc = "agent-lsp: revert one improvement (its id)" })
end

function M.setup(opts)
  for key, value in pairs(opts or {}) do
    if options[key] ~= nil then
      options[key] = value
    else -- merged, so flags = { ... } keeps debounce_text_changes = 0 unless it sets its own
      client_config = vim.tbl_deep_extend("force", client_config, { [key] = value })
    end
  end
  local group = vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  -- filetypes = {} starts no client (an empty autocmd pattern would mean every filetype): for
  -- a client started some other way, with only the commands from here.
  if #options.filetypes > 0 then
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = options.filetypes,
      callback = function(args) attach(args.buf) end,
    })
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do -- buffers opened before setup()
    local loaded = vim.api.nvim_buf_is_loaded(bufnr)
    if loaded and vim.tbl_contains(options.filetypes, vim.bo[bufnr].filetype) then
      attach(bufnr)
    end
  end
  M.commands()
end

return M

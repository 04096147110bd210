-- Driver for tests/editors/test_neovim_steer.py: :AgentTask in headless Neovim; once the model
-- was asked (AGENT_MARK_ASKED exists) the user types an `# AGENT:` line at the top of the buffer;
-- the driver waits for the line to go, says so (AGENT_MARK_TYPED), waits for the outcome and
-- writes what it saw to AGENT_NVIM_RESULT, then quits (watchdog: exit 2).
local result_path = assert(os.getenv("AGENT_NVIM_RESULT"), "AGENT_NVIM_RESULT is not set")
local asked, typed = os.getenv("AGENT_MARK_ASKED"), os.getenv("AGENT_MARK_TYPED")
local note = "# AGENT: use the helper in util.py"
local seen = { progress = {}, notifications = {} }
local function lines() return vim.api.nvim_buf_get_lines(0, 0, -1, false) end

local function save()
  local file = assert(io.open(result_path, "w"))
  file:write(vim.fn.json_encode(seen))
  file:close()
end

vim.defer_fn(function()
  seen.error = "watchdog: the driver did not finish in time"
  pcall(save)
  vim.cmd("cquit 2")
end, 110000)

local default_progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  table.insert(seen.progress, result.value.message or result.value.title or "")
  return default_progress(err, result, ctx, config)
end
local default_notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(seen.notifications, message)
  return default_notify(message, level, opts)
end
local function outcome()
  for _, message in ipairs(seen.notifications) do
    if type(message) == "string" and message:match("agent%-lsp: %a+: ") then return message end
  end
end

local ok, err = pcall(function()
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)
  assert(vim.wait(60000, function()
    local c = vim.tbl_filter(function(x) return x.name == "agent-lsp" end, clients())[1]
    return c ~= nil and c.initialized
  end, 20), "agent-lsp did not attach")
  vim.cmd("AgentTask make the failing test pass")
  assert(vim.wait(90000, function() return vim.loop.fs_stat(asked) ~= nil end, 20), "no model call")
  vim.api.nvim_buf_set_lines(0, 0, 0, false, { note }) -- the user types the line
  seen.typed = lines()[1]
  assert(vim.wait(60000, function() return lines()[1] ~= note end, 20), "the line stayed")
  seen.after = table.concat(lines(), "\n") .. "\n"
  io.open(typed, "w"):close()
  assert(vim.wait(90000, function() return outcome() ~= nil end, 20), "no outcome")
  seen.outcome = outcome()
end)
seen.ok = ok
if not ok then seen.error = tostring(err) end
save()
vim.cmd(ok and "qall!" or "cquit 1")

-- Driver for tests/editors/test_neovim_ask.py: :AgentTask in headless Neovim 0.12 where the
-- agent asks a question (ask_user) and nobody answers. vim.ui.select (what Neovim's
-- window/showMessageRequest handler prompts with) records what it shows and never answers.
-- Writes what the user saw to AGENT_NVIM_RESULT, then quits (watchdog: exit 2).
local result_path = assert(os.getenv("AGENT_NVIM_RESULT"), "AGENT_NVIM_RESULT is not set")
local seen = { prompts = {}, notifications = {} }

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

vim.ui.select = function(items, opts, _on_choice) -- shown, never answered
  local titles = vim.tbl_map(function(item) return item.title end, items)
  table.insert(seen.prompts, { prompt = opts.prompt, items = titles })
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
  assert(vim.wait(60000, function()
    return #vim.lsp.get_clients({ name = "agent-lsp", bufnr = 0 }) > 0
      and vim.lsp.get_clients({ name = "agent-lsp", bufnr = 0 })[1].initialized
  end, 20), "agent-lsp did not attach")
  vim.cmd("AgentTask make the failing test pass")
  assert(vim.wait(90000, function() return #seen.prompts > 0 end, 20), "no question shown")
  seen.prompts_while_waiting = #seen.prompts
  assert(vim.wait(90000, function() return outcome() ~= nil end, 20), "no outcome")
  seen.outcome = outcome()
  seen.buffer = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n"
end)
seen.ok = ok
if not ok then seen.error = tostring(err) end
save()
vim.cmd(ok and "qall!" or "cquit 1")

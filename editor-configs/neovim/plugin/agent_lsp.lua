-- agent-lsp's commands (:AgentFix, :AgentTask, :AgentCancel, :AgentTests, :AgentLog,
-- :AgentImprove …) as soon as this directory is on 'runtimepath', for any agent-lsp client;
-- setup() starts the clients.
if vim.g.loaded_agent_lsp or vim.fn.has("nvim-0.7") == 0 then
  return
end
vim.g.loaded_agent_lsp = true
require("agent_lsp").commands()

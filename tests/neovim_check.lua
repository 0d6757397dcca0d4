-- Drives openvaala-lsp from real Neovim with the setup documented in editor-extensions/nvim/README.md.
local root = vim.fn.getcwd()
local events = {}
local client_id = vim.lsp.start({
  name = "openvaala",
  cmd = { "openvaala-lsp" },
  root_dir = root,
  handlers = {
    ["openvaala/conversationEvent"] = function(_, params) table.insert(events, params.event) end,
  },
}, { attach = false })
local client = vim.lsp.get_client_by_id(client_id)
local ok = vim.wait(10000, function() return client.initialized end, 20)
assert(ok, "not initialized")
local info = client.server_capabilities.experimental.openvaala
print("protocol " .. info.protocolVersion .. ", " .. #info.methods .. " methods")
local result = client:request_sync("openvaala/createConversation", vim.empty_dict(), 10000)
local conversation = result.result
print("conversation " .. conversation.id .. " in " .. conversation.executorSettings.directory)
client:request_sync("openvaala/subscribeConversation", { conversationId = conversation.id }, 10000)
client:request_sync("openvaala/setConversationTitle", { conversationId = conversation.id, title = "from Neovim" }, 10000)
vim.wait(5000, function() return #events > 0 end, 20)
print("event " .. events[1].type .. ": " .. events[1].title)
client:stop()
vim.wait(5000, function() return client:is_stopped() end, 20)
vim.cmd("qa!")

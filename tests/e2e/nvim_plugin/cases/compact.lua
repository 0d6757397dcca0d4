-- :Openvaala compact: the context is compacted; the buffer shows it and the context usage
-- drops. Runs once the server advertises compactContext.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
H.start_server()
H.require_method("openvaala/compactContext")
local buf, conv = H.new_conversation()

model:enqueue({ { "deltas", 400, "word " }, { "finish", { prompt_tokens = 3000, completion_tokens = 2000, total_tokens = 5000 } } })
vim.cmd("Openvaala send write a lot")
H.wait_text("the long turn", buf, H.contains("✓ turn completed"))
H.wait("the context usage", function()
  return conv.context.tokens >= 5000
end)
local before = conv.context.tokens

model:enqueue({ { "text", "Summary: the user asked for many words." } })
vim.cmd("Openvaala compact")
local text = H.wait_text("the compaction", buf, H.contains("context compacted"), 30000)
H.wait("idle again", function()
  return conv.state == "idle"
end, 30000)
H.check("the context shrank", conv.context.tokens < before, ("%d → %d"):format(before, conv.context.tokens))
H.check("the statusline shows the new usage", require("openvaala").statusline():find("ctx", 1, true), require("openvaala").statusline())
H.equal("the earlier answer stays once", H.count(text, "## Assistant\n"), 1)

-- Create a conversation, send, and watch the buffer fill while the answer streams: the partial
-- text is checked mid-stream, then the completed item replaces the streamed one (once, not twice).
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })

local buf, conv = H.new_conversation()
H.check("the header names the agent and the model", H.text(buf):find("agent default · model fake/fake-model", 1, true), H.text(buf))

model:enqueue({
  { "text", "Hello", ", streaming " },
  { "pause", 1.5 },
  { "text", "world." },
  { "finish", { prompt_tokens = 120, completion_tokens = 30, total_tokens = 150 } },
})
vim.cmd("Openvaala send Say hello")

local mid = H.wait_text("the first deltas", buf, H.contains("Hello, streaming"))
H.check("mid-stream: the partial answer is shown", mid:find("## Assistant …\nHello, streaming", 1, true), mid)
H.check("mid-stream: the rest has not arrived", not mid:find("world.", 1, true), mid)
H.check("mid-stream: the prompt is in the buffer", mid:find("## You\nSay hello", 1, true), mid)
H.check("mid-stream: the buffer says the agent works", mid:find("⋯ working", 1, true), mid)
local status = require("openvaala").statusline()
H.check("mid-stream: the statusline says running", status:find("^openvaala running"), status)

local done = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"))
H.equal("the answer appears once", H.count(done, "Hello, streaming world."), 1)
H.check("the streaming marker is gone", not done:find("## Assistant …", 1, true), done)
H.check("the turn footer shows its tokens", done:find("✓ turn completed · 150 tokens", 1, true), done)
H.check("no longer working", not done:find("⋯ working", 1, true), done)
H.wait("the statusline to show the context", function()
  return require("openvaala").statusline():find("ctx", 1, true)
end)
H.equal("the statusline", require("openvaala").statusline(), "openvaala idle · ctx 150/8k (2%)")
H.check("the header shows the context", H.text(buf):find("idle · context 150/8k (2%)", 1, true), H.text(buf))

-- the model got the prompt
local requests = model:requests()
local messages = requests[1].json.messages
H.equal("the prompt reached the model", messages[#messages].content, "Say hello")

-- The runtime host is killed (SIGKILL) while an answer streams: openvaala-lsp starts a new host,
-- the buffer reconnects by itself and shows the turn as it ended: the partial answer (as last
-- saved), marked interrupted, and why (`reason: runtimeStopped`). Then the conversation goes on.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "The partial answer, " }, { "text", "as far as it got" }, { "pause", 60 } })
vim.cmd("Openvaala send tell me everything")
H.wait_text("the answer streaming", buf, H.contains("as far as it got"))
-- the runtime saves a streaming answer a second after it grows: wait until the history holds it
local saved = false
for _ = 1, 100 do
  local result = H.request("query", {
    sql = "SELECT count(*) FROM streaming_items WHERE json_extract_string(payload, '$.content[0].text') LIKE '%as far as it got%'",
  })
  saved = result.rows[1][1] > 0
  if saved then
    break
  end
  vim.wait(200)
end
H.check("the partial answer was saved while it streamed", saved)

local pid = tonumber(vim.fn.readfile(H.home .. "/run/host.pid")[1])
H.check("the host's pid", pid)
vim.uv.kill(pid, "sigkill")
local text = H.wait_text("the turn as it ended", buf, H.contains("⏹ turn interrupted"), 30000)
H.check("the partial answer is kept, marked interrupted", text:find("## Assistant (interrupted)\nThe partial answer, as far as it got\n", 1, true), text)
H.check("the footer says why", text:find("⏹ turn interrupted: the runtime stopped mid-turn; its answer is kept as far as it was saved (runtimeStopped)", 1, true), text)
H.equal("the answer once", H.count(text, "as far as it got"), 1)
H.equal("nothing streams any more", #conv.streaming, 0)
H.equal("the session is idle", conv.state, "idle")
H.check("it caught up after the closed subscriptions", (conv.last_resync or ""):find("runtimeStopped", 1, true), conv.last_resync)
H.equal("live", conv.status, "ready")
H.check("a new host runs", tonumber(vim.fn.readfile(H.home .. "/run/host.pid")[1]) ~= pid)

model:enqueue({ { "text", "Back again." } })
vim.cmd("Openvaala send go on")
text = H.wait_text("the next turn", buf, H.contains("✓ turn completed"), 30000)
H.equal("its answer once", H.count(text, "Back again."), 1)
H.equal("the partial answer still once", H.count(text, "as far as it got"), 1)

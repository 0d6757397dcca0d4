-- A long answer streams into the buffer whole and in order: 3000 deltas at once (the server
-- coalesces them), then 300 chunks 5 ms apart (a notification each), and the editor keeps up
-- (renders are batched; only the changed tail of the live part is rewritten).
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

local renders = 0
local set_lines = vim.api.nvim_buf_set_lines
vim.api.nvim_buf_set_lines = function(b, ...)
  if b == buf then
    renders = renders + 1
  end
  return set_lines(b, ...)
end
local steps = { { "deltas", 3000, "line\n" } }
for i = 1, 300 do
  table.insert(steps, { "text", ("chunk %d\n"):format(i) })
  table.insert(steps, { "pause", 0.005 })
end
model:enqueue(steps)
local started = vim.uv.hrtime()
vim.cmd("Openvaala send a long answer please")
local text = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"), 60000)
local seconds = (vim.uv.hrtime() - started) / 1e9
vim.api.nvim_buf_set_lines = set_lines
H.equal("every line once", H.count(text, "line\n"), 3000)
local chunks = {}
for i = 1, 300 do
  chunks[i] = ("chunk %d\n"):format(i)
end
H.check("in one answer, in order", text:find("## Assistant\n" .. string.rep("line\n", 3000) .. table.concat(chunks), 1, true), #text)
H.check("fewer renders than deltas", renders < 3300, renders)
H.check("within 20 s", seconds < 20, seconds)
io.stderr:write(("3000 deltas in %.2f s, %d buffer writes\n"):format(seconds, renders))

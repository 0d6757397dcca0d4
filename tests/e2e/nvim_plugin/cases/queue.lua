-- Inputs while a turn runs: a queued one shows as queued and can be withdrawn (picked from the
-- pending inputs); a queued one picked with `:Openvaala steer` and a text given to
-- `:Openvaala steer` both reach the running turn at its next model call.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({ { "text", "working on it" }, { "pause", 2.0 }, { "tool_call", "c1", "glob", { '{"pattern": "*"}' } } })
model:enqueue({ { "text", "second step" }, { "pause", 1.5 }, { "tool_call", "c2", "glob", { '{"pattern": "*"}' } } })
model:enqueue({ { "text", "steered answer" } })
vim.cmd("Openvaala send first")
H.wait_text("the first deltas", buf, H.contains("working on it"))

-- queued, then withdrawn
vim.cmd("Openvaala send second, queued")
H.wait_text("the queued input", buf, H.contains("## You (queued)\nsecond, queued"))
H.check("the statusline counts it", require("openvaala").statusline():find("1 queued", 1, true), require("openvaala").statusline())
H.on_select(H.label("second, queued"))
vim.cmd("Openvaala withdraw")
H.wait_text("the withdrawn input to go", buf, function(t)
  return not t:find("second, queued", 1, true)
end)
H.equal("the withdraw picker lists the pending input", H.picker("withdraw").labels, { "queue: second, queued" })
H.equal("nothing is pending", #conv.pending, 0)

-- queued, then steered into the running turn
vim.cmd("Openvaala send also do this")
H.wait_text("the second queued input", buf, H.contains("## You (queued)\nalso do this"))
H.on_select(H.label("also do this"))
vim.cmd("Openvaala steer")
local text = H.wait_text("the second step", buf, H.contains("second step"))
H.equal("the steer picker lists the pending input", H.picker("steer").labels, { "queue: also do this" })

-- a text steered directly
vim.cmd("Openvaala steer and this too")
text = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"))
H.equal("one turn ran", H.count(text, "✓ turn completed"), 1)
H.check("the picked input is part of the turn", text:find("## You\nalso do this", 1, true), text)
H.check("the steered text is part of the turn", text:find("## You\nand this too", 1, true), text)
H.check("the steered answer came", text:find("steered answer", 1, true), text)
H.check("the withdrawn input never ran", not text:find("second, queued", 1, true), text)
H.check("nothing is shown as queued", not text:find("(queued)", 1, true), text)

local requests = model:requests()
H.equal("three model calls", #requests, 3)
local function last_user(request)
  for i = #request.json.messages, 1, -1 do
    local message = request.json.messages[i]
    if message.role == "user" then
      return type(message.content) == "string" and message.content or message.content[1].text
    end
  end
end
H.equal("the picked input reached the second model call", last_user(requests[2]), "also do this")
H.equal("the steered text reached the third model call", last_user(requests[3]), "and this too")

-- nothing running: withdraw and steer say so
local before = #H.results.notifications
vim.cmd("Openvaala withdraw")
H.wait("the answer", function()
  return #H.results.notifications > before
end)
H.equal("withdraw with nothing pending", H.results.notifications[before + 1].message, "openvaala: no input is waiting")
before = #H.results.notifications
vim.cmd("Openvaala steer")
H.wait("the answer", function()
  return #H.results.notifications > before
end)
H.equal("steer with no turn running", H.results.notifications[before + 1].message, "openvaala: no turn is running: :Openvaala send queues a message")

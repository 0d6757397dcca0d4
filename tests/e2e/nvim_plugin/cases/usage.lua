-- :Openvaala usage: token usage by day and model from openvaala/query, in a scratch buffer.
local H = require("openvaala_test.harness")
local model = H.fake_model()
-- no title calls: the report counts exactly the two turns' calls
H.write_config(model, '[[agents]]\nname = "default"\ntitles = false')
require("openvaala").setup({ open = "current" })

vim.cmd("Openvaala usage")
H.wait("the empty report", function()
  return vim.fn.bufnr("openvaala://usage") ~= -1
end)
H.check("no calls yet", H.text(vim.fn.bufnr("openvaala://usage")):find("No model calls yet.", 1, true), H.text(vim.fn.bufnr("openvaala://usage")))
vim.cmd("bwipeout openvaala://usage")

local buf = H.new_conversation()
for _, answer in ipairs({ "one", "two" }) do
  model:enqueue({ { "text", answer }, { "finish", { prompt_tokens = 100, completion_tokens = 20, total_tokens = 120 } } })
  vim.cmd("Openvaala send say " .. answer)
  H.wait_text("the answer " .. answer, buf, function(t)
    return t:find("\n" .. answer .. "\n", 1, true) and select(2, t:gsub("✓ turn completed", "")) == (answer == "one" and 1 or 2)
  end)
end

vim.cmd("Openvaala usage")
H.wait("the report", function()
  local b = vim.fn.bufnr("openvaala://usage")
  return b ~= -1 and H.text(b):find("fake/fake-model", 1, true)
end)
local report = vim.api.nvim_buf_get_lines(vim.fn.bufnr("openvaala://usage"), 0, -1, false)
local today = os.date("!%Y-%m-%d")
local header, row
for _, line in ipairs(report) do
  if line:find("^day ") then
    header = line
  elseif vim.startswith(line, today) then
    row = line
  end
end
H.check("the report has a header", header and header:find("model%s+calls%s+input%s+cached%s+output%s+reasoning%s+total"), vim.inspect(report))
local fields = vim.split(row or "", "%s+", { trimempty = true })
H.equal("today's row: day, model, calls, input, cached, output, reasoning, total", { unpack(fields, 1, 8) }, { today, "fake/fake-model", "2", "200", "0", "40", "0", "240" })
H.check("a totals row", report[#report]:find("^total%s+2%s+200"), report[#report])
H.equal("the report is read-only", vim.bo[vim.fn.bufnr("openvaala://usage")].modifiable, false)

-- Tool calls and their results, reasoning folded, long results folded.
local H = require("openvaala_test.harness")
local model = H.fake_model()
H.write_config(model)
require("openvaala").setup({ open = "current" })
local buf, conv = H.new_conversation()

model:enqueue({
  { "reasoning", "First I think.\nThen I think more.\nThen I decide." },
  { "text", "Let me run it." },
  { "tool_call", "call_1", "shell", { '{"command": "echo hi-from', '-the-tool"}' } },
})
model:enqueue({ { "tool_call", "call_2", "shell", { '{"command": "seq 1 20"}' } } })
model:enqueue({ { "text", "All done." } })
vim.cmd("Openvaala send run the tools")
local text = H.wait_text("the completed turn", buf, H.contains("✓ turn completed"))

H.check("the tool call shows the command", text:find("⚙ shell echo hi-from-the-tool", 1, true), text)
H.check("the result shows its output", text:find("⚙ shell echo hi-from-the-tool\n  ↳ shell (2 lines)\n    hi-from-the-tool\n    [exit code 0]\n", 1, true), text)
H.check("the long result shows its size", text:find("  ↳ shell (21 lines)", 1, true), text)
H.check("the reasoning is there", text:find("▸ reasoning (3 lines)\n  First I think.", 1, true), text)
H.equal("the final answer appears once", H.count(text, "All done."), 1)
H.equal("each tool call appears once", H.count(text, "⚙ shell"), 2)
local order = { "## You", "▸ reasoning", "Let me run it.", "⚙ shell echo", "↳ shell (2 lines)", "⚙ shell seq 1 20", "↳ shell (21 lines)", "All done.", "✓ turn completed" }
local at = 0
for _, needle in ipairs(order) do
  local found = text:find(needle, at + 1, true)
  H.check("in order: " .. needle, found, text)
  at = found
end

-- folds in the conversation's window
local win = vim.fn.win_findbuf(buf)[1]
H.check("the conversation is shown in a window", win)
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local function line_of(prefix)
  for i, line in ipairs(lines) do
    if vim.startswith(line, prefix) then
      return i
    end
  end
end
local folds = vim.api.nvim_win_call(win, function()
  local function fold(prefix, offset)
    local line = assert(line_of(prefix), prefix)
    return { line = line, closed = vim.fn.foldclosed(line + offset), level = vim.fn.foldlevel(line + offset) }
  end
  return {
    reasoning = fold("▸ reasoning", 1),
    long = fold("  ↳ shell (21 lines)", 5),
    short = fold("  ↳ shell (2 lines)", 1),
    answer = fold("All done.", 0),
  }
end)
H.equal("the reasoning is folded", folds.reasoning.closed, folds.reasoning.line)
H.equal("the long result is folded", folds.long.closed, folds.long.line)
H.equal("the short result is not folded", folds.short.closed, -1)
H.equal("the answer is not folded", folds.answer.closed, -1)

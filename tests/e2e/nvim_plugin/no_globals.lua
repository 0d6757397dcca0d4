-- Lists every global the plugin's Lua files read or write but Neovim does not define, from
-- LuaJIT's bytecode (GGET/GSET), so a misspelled local or a leaked global fails the suite even on
-- paths the end-to-end cases do not take. Usage: nvim -l no_globals.lua <plugin dir>
local bc = require("jit.bc")
local known = { vim = true, unpack = true }
for name in pairs(_G) do
  known[name] = true
end

local problems = {}
local files = vim.fs.find(function(name)
  return name:match("%.lua$")
end, { path = assert(arg[1], "the plugin directory"), type = "file", limit = math.huge })
table.sort(files)
for _, path in ipairs(files) do
  local chunk = assert(loadfile(path))
  local out = {}
  local sink = {
    write = function(_, text)
      table.insert(out, text)
    end,
    flush = function() end,
  }
  bc.dump(chunk, sink, true)
  for line in table.concat(out):gmatch("[^\n]+") do
    local op, name = line:match("%s(G[GS]ET)%s.-\"([^\"]+)\"")
    if op == "GSET" or (op == "GGET" and not known[name]) then
      table.insert(problems, ("%s: %s %s"):format(path, op == "GSET" and "sets the global" or "reads the unknown global", name))
    end
  end
end
print(("%d files checked"):format(#files))
for _, problem in ipairs(problems) do
  print(problem)
end
os.exit(#problems == 0 and #files > 0 and 0 or 1)

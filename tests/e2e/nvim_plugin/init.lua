-- The test user's init.lua: installs the plugin the way users do, from a package directory on
-- 'packpath' (OPENVAALA_TEST_INSTALL=packpath) or from 'runtimepath' (=rtp, what lazy.nvim does).
-- New globals are recorded with the file that set them, so the harness can tell whether the
-- plugin leaked any (Neovim 0.11.4's own treesitter code sets `_`).
local set_by = {}
package.loaded["openvaala_test.globals"] = set_by
setmetatable(_G, {
  __newindex = function(t, key, value)
    local info = debug.getinfo(2, "S")
    set_by[tostring(key)] = info and info.source or "?"
    rawset(t, key, value)
  end,
})

local install = os.getenv("OPENVAALA_TEST_INSTALL") or "packpath"
if install == "packpath" then
  vim.opt.packpath:prepend(assert(os.getenv("OPENVAALA_TEST_PACKPATH")))
else
  vim.opt.runtimepath:prepend(assert(os.getenv("OPENVAALA_TEST_PLUGIN")))
end
vim.opt.runtimepath:append(assert(os.getenv("OPENVAALA_TEST_DIR")))
vim.o.shortmess = vim.o.shortmess .. "F"

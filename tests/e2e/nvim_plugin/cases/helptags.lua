-- Installed as lazy.nvim does (the plugin's directory on 'runtimepath', no :helptags run): the
-- plugin makes its help tags when it loads, so :help openvaala works at once.
local H = require("openvaala_test.harness")
local plugin = assert(os.getenv("OPENVAALA_TEST_PLUGIN"))
H.check("installed from its own copy", vim.startswith(vim.api.nvim_get_runtime_file("plugin/openvaala.lua", false)[1] or "", plugin),
  vim.inspect(vim.api.nvim_get_runtime_file("plugin/openvaala.lua", true)))
H.equal("the tags were made at load", vim.fn.filereadable(plugin .. "/doc/tags"), 1)
local tags = table.concat(vim.fn.readfile(plugin .. "/doc/tags"), "\n")
for _, tag in ipairs({ "openvaala.txt", ":Openvaala", "openvaala-changes", "openvaala-context" }) do
  H.check("the tags hold " .. tag, tags:find("^" .. vim.pesc(tag) .. "\t") or tags:find("\n" .. vim.pesc(tag) .. "\t"), tags)
end
vim.cmd("help openvaala-changes")
H.equal("the help opens", vim.bo.filetype, "help")
H.check("at the section", vim.api.nvim_get_current_line():find("*openvaala-changes*", 1, true), vim.api.nvim_get_current_line())

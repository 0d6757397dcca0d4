-- :Openvaala; everything else loads on first use.
if vim.g.loaded_openvaala then
  return
end
vim.g.loaded_openvaala = true

if vim.fn.has("nvim-0.11") ~= 1 then
  vim.notify("openvaala needs Neovim 0.11 or newer", vim.log.levels.ERROR, { title = "openvaala" })
  return
end

-- :help openvaala without :helptags (lazy.nvim and 'runtimepath' installs do not run it): the
-- tags are made here when missing or older than the help file, if the doc directory is writable.
do
  local source = debug.getinfo(1, "S").source:gsub("^@", "")
  local doc = vim.fs.joinpath(vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(source))), "doc")
  local help = vim.uv.fs_stat(doc .. "/openvaala.txt")
  local tags = vim.uv.fs_stat(doc .. "/tags")
  if help and (not tags or tags.mtime.sec < help.mtime.sec) and vim.fn.filewritable(doc) == 2 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
  end
end

vim.api.nvim_create_user_command("Openvaala", function(opts)
  require("openvaala.commands").run(opts)
end, {
  nargs = "*",
  range = true,
  bang = true,
  desc = "openvaala: conversations with coding agents",
  complete = function(arglead, cmdline, cursorpos)
    return require("openvaala.commands").complete(arglead, cmdline, cursorpos)
  end,
})

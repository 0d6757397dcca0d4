-- :Openvaala; everything else loads on first use.
if vim.g.loaded_openvaala then
  return
end
vim.g.loaded_openvaala = true

if vim.fn.has("nvim-0.11") ~= 1 then
  vim.notify("openvaala needs Neovim 0.11 or newer", vim.log.levels.ERROR, { title = "openvaala" })
  return
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

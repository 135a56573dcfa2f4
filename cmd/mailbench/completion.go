package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/mailbench/mailbench/configs"
)

// helpCmd is `mailbench help [COMMAND]`: the same as `mailbench COMMAND
// --help`. realMain turns it into that before parsing; this type only
// lists it among the commands.
type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to explain (none: the list of commands)."`
}

func (helpCmd) Run(*env) error { return nil } // never reached: see helpArgs

// helpArgs turns "help CMD..." into "CMD... --help".
func helpArgs(args []string) []string {
	if len(args) == 0 || args[0] != "help" {
		return args
	}
	return append(append([]string{}, args[1:]...), "--help")
}

// completionCmd is `mailbench completion SHELL`.
type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

func (completionCmd) Help() string {
	return `Prints a completion script for the shell: the commands, their flags and,
where a command takes a workload, the shipped configs' names.

Install:
  bash: mailbench completion bash > /etc/bash_completion.d/mailbench
        (or: source <(mailbench completion bash) in ~/.bashrc)
  zsh:  mailbench completion zsh > "${fpath[1]}/_mailbench"
  fish: mailbench completion fish > ~/.config/fish/completions/mailbench.fish`
}

func (c *completionCmd) Run(e *env) error {
	cmds := commandsOf(e.app)
	switch c.Shell {
	case "bash":
		return writeBash(e.stdout, cmds)
	case "zsh":
		return writeZsh(e.stdout, cmds)
	default:
		return writeFish(e.stdout, cmds)
	}
}

// completable is one command and what completes after it.
type completable struct {
	name, help string
	flags      []completableFlag
	configArg  bool // its first argument is a workload (file or shipped name)
}

type completableFlag struct{ name, help string }

// commandsOf lists the application's visible commands, sorted, with their
// flags (the global ones included).
func commandsOf(app *kong.Application) []completable {
	var out []completable
	if app == nil {
		return nil
	}
	for _, n := range app.Children {
		if n.Hidden || n.Type != kong.CommandNode {
			continue
		}
		c := completable{name: n.Name, help: firstLine(n.Help)}
		for _, f := range n.AllFlags(true) {
			for _, fl := range f {
				if !fl.Hidden {
					c.flags = append(c.flags, completableFlag{name: fl.Name, help: firstLine(fl.Help)})
				}
			}
		}
		for _, p := range n.Positional {
			if p.Name == "config" {
				c.configArg = true
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func writeBash(w io.Writer, cmds []completable) error {
	var b strings.Builder
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	b.WriteString("# bash completion for mailbench (mailbench completion bash)\n_mailbench() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}\n")
	fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(names, " ")+" --help --version")
	b.WriteString("  case $cmd in\n")
	for _, c := range cmds {
		var flags []string
		for _, f := range c.flags {
			flags = append(flags, "--"+f.name)
		}
		words := strings.Join(flags, " ")
		if c.configArg {
			words += " " + strings.Join(shippedNames(), " ")
		}
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\") $(compgen -f -- \"$cur\"));;\n", c.name, strings.TrimSpace(words))
	}
	b.WriteString("    *) COMPREPLY=($(compgen -f -- \"$cur\"));;\n  esac\n}\ncomplete -o filenames -F _mailbench mailbench\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZsh reuses the bash function through zsh's bashcompinit: one
// script's logic, kept in one place.
func writeZsh(w io.Writer, cmds []completable) error {
	if _, err := io.WriteString(w, "#compdef mailbench\n# zsh completion for mailbench (mailbench completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n"); err != nil {
		return err
	}
	return writeBash(w, cmds)
}

func writeFish(w io.Writer, cmds []completable) error {
	var b strings.Builder
	b.WriteString("# fish completion for mailbench (mailbench completion fish)\ncomplete -c mailbench -f\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c mailbench -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.help))
		for _, f := range c.flags {
			fmt.Fprintf(&b, "complete -c mailbench -n '__fish_seen_subcommand_from %s' -l %s -d %s\n", c.name, f.name, fishQuote(f.help))
		}
		if c.configArg {
			fmt.Fprintf(&b, "complete -c mailbench -n '__fish_seen_subcommand_from %s' -F -a %s\n", c.name, fishQuote(strings.Join(shippedNames(), " ")))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fishQuote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// shippedNames are the shipped configs' names, which every command that
// takes a workload accepts in place of a file.
func shippedNames() []string { return configs.Names() }

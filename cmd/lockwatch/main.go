package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(lockwatch(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are the subcommands, in the order the usage lists them. Their
// names are a contract with the scripts that call them.
var commands = []*command{runCmd, electCmd, inspectCmd, releaseCmd, fenceCmd, versionCmd}

const topUsage = `lockwatch holds fenced Redis leases for programs that must not run twice at once.

Usage:
  lockwatch <command> [flags] [-- program args...]

Commands:
%s
Every command but version takes --redis, --sentinel/--master, --cluster and --user;
passwords come from $LOCKWATCH_REDIS_PASSWORD (or $REDISCLI_AUTH) and
$LOCKWATCH_SENTINEL_PASSWORD only. "lockwatch <command> -h" shows a
command's flags and exit statuses; "go doc github.com/lockwatch/lockwatch/cmd/lockwatch"
is the manual; "lockwatch --version" is "lockwatch version".
`

// lockwatch runs the command line args and returns the exit status.
func lockwatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return exitCode(stderr, usageErr("", "no command given: run, elect, inspect, release, fence or version"))
	}
	switch name := args[0]; name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				return exitCode(stderr, c.runCommand([]string{"-h"}, stdout, stderr))
			}
			return exitCode(stderr, usageErr("", "unknown command %q", args[1]))
		}
		printTopUsage(stdout)
		return exitOK
	case "-version", "--version":
		return exitCode(stderr, versionCmd.runCommand(args[1:], stdout, stderr))
	case watchdogCommand:
		return runWatchdog(args[1:], stderr)
	default:
		c := lookup(name)
		if c == nil {
			return exitCode(stderr, usageErr("", "unknown command %q", name))
		}
		return exitCode(stderr, c.runCommand(args[1:], stdout, stderr))
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printTopUsage(w io.Writer) {
	var list strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&list, "  %-8s %s\n", c.name, c.synopsis)
	}
	fmt.Fprintf(w, topUsage, list.String())
}

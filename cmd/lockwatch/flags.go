package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one subcommand: its flag set, which prints its manual for -h,
// and what it does with the parsed flags.
type command struct {
	name     string
	synopsis string // the one line the top-level usage shows
	usage    string // the usage line and the text -h prints above the flags
	setup    func(fs *flag.FlagSet) func(args []string, stdout, stderr io.Writer) error
}

// runCommand parses args with a fresh FlagSet and runs the subcommand.
// Parse errors are one line (the flag package would print the whole usage
// after them, which buries the error in a cron mail); -h prints the manual
// on stdout and succeeds.
func (c *command) runCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lockwatch "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	do := c.setup(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout, fs)
			return nil
		}
		return usageErr(c.name, "%v", err)
	}
	return do(fs.Args(), stdout, stderr)
}

// printUsage prints the subcommand's manual and its flags.
func (c *command) printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, strings.TrimSpace(c.usage))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// given returns the names of the flags set on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// keyFlags name a lease's key, as every subcommand takes it.
type keyFlags struct{ key, namespace string }

func (k *keyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.key, "key", "", "the lease's `key` (required)")
	fs.StringVar(&k.namespace, "namespace", defaultNamespace, "the `prefix` of the lease's Redis keys")
}

// checkKeyOnly is the check of a subcommand that takes a key and no
// arguments.
func (k *keyFlags) checkKeyOnly(cmd string, args []string) error {
	switch {
	case k.key == "":
		return usageErr(cmd, "--key is required")
	case k.namespace == "":
		return usageErr(cmd, "--namespace must not be empty")
	case len(args) > 0:
		return usageErr(cmd, "unexpected argument %q", args[0])
	}
	return nil
}

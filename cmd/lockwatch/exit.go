package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit statuses. The values come from sysexits.h where one fits, so that
// a cron wrapper or a shell script can tell "someone else has it" (75,
// EX_TEMPFAIL: try again later) from "Redis is down" (69, EX_UNAVAILABLE)
// and from the program's own failures, which pass through unchanged.
// 126 and 127 are what shells return for a program they cannot run.
const (
	exitOK          = 0
	exitNotHeld     = 1  // release: the key was not held, nothing changed
	exitUsage       = 64 // EX_USAGE: bad flags, missing --key, no program
	exitNeverSeen   = 66 // EX_NOINPUT: inspect: Redis has nothing of the key
	exitUnavailable = 69 // EX_UNAVAILABLE: Redis unreachable or refused; nothing taken
	exitInternal    = 70 // EX_SOFTWARE: any other internal failure
	exitHeld        = 75 // EX_TEMPFAIL: the key is held by another
	exitUnknown     = 76 // the acquire's result is unknown; the program never ran
	exitLost        = 79 // the lease was lost while the program ran
	exitNoExec      = 126
	exitNotFound    = 127
	// exitSignalBase plus a signal number is the status of a program
	// killed by that signal, as shells report it.
	exitSignalBase = 128
)

// exitError ends a subcommand with status code after printing msg (one
// line, prefixed "lockwatch: ") on stderr. An empty msg prints nothing:
// the status says it all (a program's own failure).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an exitError with a formatted message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// usageErr is a usage error of subcommand cmd: one line, with a pointer to
// its -h.
func usageErr(cmd, format string, args ...any) error {
	hint := "lockwatch -h"
	if cmd != "" {
		hint = "lockwatch " + cmd + " -h"
	}
	return fail(exitUsage, "%s (see %s)", fmt.Sprintf(format, args...), hint)
}

// exitCode prints err, if it has a message, and returns its status. An
// error that is not an exitError is an internal failure.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if !errors.As(err, &e) {
		e = &exitError{code: exitInternal, msg: err.Error()}
	}
	if e.msg != "" {
		fmt.Fprintln(stderr, "lockwatch: "+oneLine(e.msg))
	}
	return e.code
}

// oneLine keeps a message on one line: an operator greps for it, and a
// cron mail should not be a stack of wrapped errors.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

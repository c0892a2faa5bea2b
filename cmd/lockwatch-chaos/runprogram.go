package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// programEnv marks a re-executed copy of this binary as the program a
// lockwatch run holder runs under its lease (or as the process that
// program leaves behind), and carries its spec as JSON. lockwatch run
// passes its environment on, and adds the fence and the key.
const programEnv = "LOCKWATCH_CHAOS_PROGRAM"

// The variables lockwatch run adds to its program's environment
// (cmd/lockwatch's doc).
const (
	envFence = "LOCKWATCH_FENCE"
	envKey   = "LOCKWATCH_KEY"
)

func isProgram() bool { return os.Getenv(programEnv) != "" }

// Roles of a process that heartbeats.
const (
	roleProgram = "program" // the program lockwatch run started
	roleChild   = "child"   // what it left behind, which lockwatch can reach
	// roleUnsupervised: left behind where lockwatch run says it cannot
	// reach (off Linux, a process that left the program's group). The
	// harness makes such a process only on purpose, and only its
	// heartbeats are left out of the checks.
	roleUnsupervised = "unsupervised"
)

// Ways a program leaves a process behind.
const (
	leaveGroup  = "group"  // a child in the program's process group
	leaveSetsid = "setsid" // a child that leaves the group (a daemon's setsid)
)

// programSpec is what a program does, drawn by its run holder.
type programSpec struct {
	Holder     string        `json:"holder"`
	Seq        int           `json:"seq"`             // the holder's run it is the program of
	Fault      int           `json:"fault,omitempty"` // the armed fault it runs for
	Work       time.Duration `json:"work"`            // how long it heartbeats before it exits
	Beat       time.Duration `json:"beat"`            // the interval of its heartbeats
	IgnoreTerm bool          `json:"ignore_term,omitempty"`
	Leave      string        `json:"leave,omitempty"` // "", leaveGroup or leaveSetsid
	ChildLife  time.Duration `json:"child_life"`      // how long the left process outlives the program
	Role       string        `json:"role"`            // this process's role
}

// beat is one heartbeat: a process working with a fence, on the one
// system-wide clock (now). It is written to stdout, which lockwatch run
// passes on, in one write, so that the lines of the processes that share
// the pipe never interleave.
type beat struct {
	Holder string `json:"h"`
	Fence  int64  `json:"f"`
	Key    string `json:"k"`
	Pid    int    `json:"pid"`
	Role   string `json:"r"`
	At     int64  `json:"t"`
	Start  bool   `json:"start,omitempty"` // the program's first heartbeat
	Seq    int    `json:"seq,omitempty"`   // on Start: the holder's run
	Fault  int    `json:"fault,omitempty"`
	Until  int64  `json:"until,omitempty"` // on Start: when its work ends
}

// programMain heartbeats with the fence lockwatch run gave it until its
// work is done, or until SIGTERM unless it ignores it. It exits 0 either
// way: how it ended is lockwatch's to report.
func programMain() int {
	var spec programSpec
	if err := json.Unmarshal([]byte(os.Getenv(programEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "chaos program:", err)
		return 2
	}
	fence, err := strconv.ParseInt(os.Getenv(envFence), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos program: $%s: %v\n", envFence, err)
		return 2
	}
	term := make(chan os.Signal, 1)
	if spec.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	enc := json.NewEncoder(os.Stdout)
	b := beat{Holder: spec.Holder, Fence: fence, Key: os.Getenv(envKey), Pid: os.Getpid(), Role: spec.Role}
	until := now() + int64(spec.Work)
	if spec.Role == roleProgram {
		first := b
		first.At, first.Start, first.Seq, first.Fault, first.Until = now(), true, spec.Seq, spec.Fault, until
		_ = enc.Encode(first)
		if spec.Leave != "" {
			if err := leaveBehind(spec); err != nil {
				fmt.Fprintln(os.Stderr, "chaos program: leave a process behind:", err)
			}
		}
	}
	tick := time.NewTicker(spec.Beat)
	defer tick.Stop()
	for now() < until {
		select {
		case <-term:
			return 0
		case <-tick.C:
		}
		b.At = now()
		_ = enc.Encode(b) // a pipe the harness closed: the beat is lost, the work goes on
	}
	return 0
}

// leaveBehind starts the process the program leaves behind: this binary
// again, heartbeating with the same fence until ChildLife after the
// program's work ends, in the program's group or out of it (setsid).
// The program does not wait for it.
func leaveBehind(spec programSpec) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	child := spec
	child.Leave, child.Work, child.Role = "", spec.Work+spec.ChildLife, roleChild
	if spec.Leave == leaveSetsid && !setsidSupervised {
		child.Role = roleUnsupervised
	}
	env, err := json.Marshal(child)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), programEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: spec.Leave == leaveSetsid}
	return cmd.Start()
}

package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// testProgramEnv, set in its environment, makes the test binary run a
// program for lockwatch to supervise instead of the tests (TestMain). A
// shell script forks for every command it runs, and a stop sent to its
// whole group can catch a child between vfork and exec: the shell then
// waits for it in the kernel and cannot stop until it is continued. This
// program never forks, so a stop stops it at once.
const testProgramEnv = "LOCKWATCH_TEST_PROGRAM"

// beatEnv is the environment that makes the test binary run beatProgram.
var beatEnv = testProgramEnv + "=beat"

// runTestProgram runs the test program name and returns its status.
func runTestProgram(name string) int {
	if name == "beat" {
		return beatProgram(os.Getenv("DIR"))
	}
	return 2
}

// beatProgram writes its pid to dir/pid, then a heartbeat (its clock in
// nanoseconds) to dir/beats every 20 ms until dir/stop exists (1000 beats
// at most). On SIGTERM it creates dir/term, records the time in
// dir/term.at and exits 0.
func beatProgram(dir string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	write := func(name, s string) {
		_ = os.WriteFile(filepath.Join(dir, name+".tmp"), []byte(s), 0o644)
		_ = os.Rename(filepath.Join(dir, name+".tmp"), filepath.Join(dir, name))
	}
	write("pid", strconv.Itoa(os.Getpid())+"\n")
	beats, err := os.OpenFile(filepath.Join(dir, "beats"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 1
	}
	tick := time.NewTicker(20 * time.Millisecond)
	for range 1000 {
		select {
		case <-term:
			now := time.Now().UnixNano()
			write("term", "\n")
			write("term.at", strconv.FormatInt(now, 10)+"\n")
			return 0
		case <-tick.C:
			if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
				return 0
			}
			_, _ = beats.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
		}
	}
	return 0
}

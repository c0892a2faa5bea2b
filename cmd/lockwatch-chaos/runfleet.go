package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
)

// lockwatchPkg is the CLI the run holders run, built from the module the
// harness is run in: the code under test, not a released copy.
const lockwatchPkg = "github.com/lockwatch/lockwatch/cmd/lockwatch"

// buildLockwatch builds lockwatchPkg into dir.
func buildLockwatch(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command to build lockwatch with (give -lockwatch): %w", err)
	}
	bin := filepath.Join(dir, "lockwatch")
	if out, err := exec.Command(goTool, "build", "-o", bin, lockwatchPkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", lockwatchPkg, err, out)
	}
	return bin, nil
}

// runFleet is the run holders and the heartbeats of their programs.
type runFleet struct {
	holders []*runHolder
	beats   *heartbeats
	reads   []*os.File // the heartbeat pipes' read ends
	readers sync.WaitGroup
	once    sync.Once
}

// startRuns starts cfg.runs run holders of lockwatch binary bin against
// target, and cfg.elects lockwatch elect candidates, each logging to
// <its name>.log in dir. On single, each reaches the lock
// Redis through a forwarder of its own, which run-ignore-term can cut.
func startRuns(cfg config, bin, dir string, target lockTarget, keys []string, stop <-chan struct{}) (*runFleet, error) {
	f := &runFleet{beats: newHeartbeats()}
	if err := f.setUp(cfg, bin, dir, target, keys, stop); err != nil {
		return nil, errors.Join(err, f.close())
	}
	for _, h := range f.holders {
		go h.run()
	}
	return f, nil
}

// setUp makes the holders, their pipes, logs and forwarders.
func (f *runFleet) setUp(cfg config, bin, dir string, target lockTarget, keys []string, stop <-chan struct{}) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for i := 1; i <= cfg.runs+cfg.elects; i++ {
		h := &runHolder{id: fmt.Sprintf("r%d", i), bin: bin, self: self, ttl: cfg.ttl, keys: keys,
			rng: rand.New(rand.NewPCG(cfg.seed+uint64(200+i), 0x72756e)), stop: stop, starts: make(chan beat, 8), done: make(chan struct{})}
		if i > cfg.runs { // the lockwatch elect candidates, after the others
			h.id, h.elect, h.keys = fmt.Sprintf("c%d", cfg.candidates+cfg.candProcs+i-cfg.runs), true, []string{electionKey}
		}
		f.holders = append(f.holders, h)
		var r *os.File
		if r, h.pipe, err = os.Pipe(); err != nil {
			return err
		}
		f.reads = append(f.reads, r)
		f.readers.Go(func() { f.beats.read(r, h.started) })
		// Appended to by every lockwatch run and its program, and by
		// what a program left behind, all at once.
		if h.log, err = os.OpenFile(filepath.Join(dir, h.id+".log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		addr := ""
		if target.Topology == topoSingle {
			if h.fwd, err = faultproxy.Launch(target.Addrs[0]); err != nil {
				return err
			}
			addr = h.fwd.Addr()
		}
		h.conn = connFlags(target, addr)
	}
	return nil
}

// finish waits for every holder's last run to exit (they got SIGTERM when
// the run stopped), then for the heartbeats of what their programs left:
// a process still heartbeating then has outlived its lockwatch run, and is
// killed and reported.
func (f *runFleet) finish(timeout time.Duration) (outlived []string, err error) {
	var errs []error
	for _, h := range f.holders {
		errs = append(errs, h.finish(timeout))
	}
	for _, pid := range f.beats.pids() {
		if isProgramProcess(pid) {
			outlived = append(outlived, fmt.Sprintf("pid %d, which heartbeated for a lockwatch run, outlived it", pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return outlived, errors.Join(append(errs, f.close())...)
}

// close ends the heartbeat pipes: once what holds their write ends has
// exited, or after 10 s (a process the harness could not see), and closes
// the holders' forwarders and logs. Safe to call more than once.
func (f *runFleet) close() error {
	var errs []error
	f.once.Do(func() {
		for _, h := range f.holders {
			if h.pipe != nil {
				errs = append(errs, h.pipe.Close())
			}
		}
		drained := make(chan struct{})
		go func() {
			f.readers.Wait()
			close(drained)
		}()
		select {
		case <-drained:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("a heartbeat pipe stayed open 10 s after the last lockwatch run exited"))
		}
		for _, r := range f.reads {
			_ = r.Close()
		}
		<-drained
		for _, h := range f.holders {
			if h.fwd != nil {
				errs = append(errs, h.fwd.Close())
			}
			if h.log != nil {
				errs = append(errs, h.log.Close())
			}
		}
	})
	return errors.Join(errs...)
}

// runs are every holder's lockwatch runs (elect false) or lockwatch elect
// campaigns (elect true).
func (f *runFleet) runs(elect bool) []runRec {
	var out []runRec
	for _, h := range f.holders {
		h.mu.Lock()
		if h.elect == elect {
			out = append(out, h.runs...)
		}
		h.mu.Unlock()
	}
	return out
}

// runHolders are the lockwatch run holders, which the run lane's faults
// pick from.
func (f *runFleet) runHolders() []*runHolder {
	return slices.DeleteFunc(slices.Clone(f.holders), func(h *runHolder) bool { return h.elect })
}

// runFigures are the run holders' lockwatch runs by how they ended, and
// their programs' heartbeats.
type runFigures struct {
	Elect                            bool // the lockwatch elect candidates' campaigns
	Runs, Ran                        int  // lockwatch runs, and those whose program started
	Programs                         int  // programs started: one per run, one per term of a campaign
	Exit0, Lost, Held, Unknown, Down int  // by status: 0, 79, 75, 76, 69
	Refused, Stopped, Other          int  // 64 for a --grace past the margin; 143 after the run's SIGTERM; the rest
	Beats, Unsupervised              int
	AfterExit, AfterExpiry           int              // processes that heartbeated after their lockwatch run exited, after their key expired
	exited                           map[workID]int64 // when the run that held each program's fence exited
	unexpected                       []string
}

// runFiguresOf sorts runs by how they ended. A status lockwatch run (or
// elect) does not document for what happened is a violation, and so is a
// --grace refused that was within the margin. A lockwatch elect runs a
// program in each term it leads, and exits when one exits by itself while
// leading (0), or was lost as it did (79).
func runFiguresOf(runs []runRec, hb *heartbeats, margin time.Duration, elect bool) runFigures {
	fig := runFigures{Elect: elect, Runs: len(runs), exited: map[workID]int64{}}
	for _, r := range runs {
		if bs := hb.startsOf(r.Holder, r.Seq); len(bs) > 0 {
			fig.Ran++
			fig.Programs += len(bs)
			for _, b := range bs {
				fig.exited[workID{r.Holder, b.Fence}] = r.Exit
			}
		}
		switch {
		case elect && (r.Status == exitHeld || r.Status == exitUnknown):
			fig.Other++
			fig.unexpected = append(fig.unexpected, fmt.Sprintf("%s: lockwatch elect #%d exited %d: %s", r.Holder, r.Seq, r.Status, r.Said))
		case r.Status == 0:
			fig.Exit0++
		case r.Status == exitLost:
			fig.Lost++
		case r.Status == exitHeld:
			fig.Held++
		case r.Status == exitUnknown:
			fig.Unknown++
		case r.Status == exitUnavailable:
			fig.Down++
		case r.Status == exitUsage && r.Grace > margin:
			fig.Refused++
		case r.Status == exitTerm && r.Termed:
			fig.Stopped++
		default:
			fig.Other++
			fig.unexpected = append(fig.unexpected, fmt.Sprintf("%s: lockwatch run #%d on %s exited %d: %s", r.Holder, r.Seq, r.Key, r.Status, r.Said))
		}
	}
	slices.Sort(fig.unexpected)
	return fig
}

func (f runFigures) String() string {
	if f.Elect {
		return fmt.Sprintf("lockwatch elect: %d campaigns, %d led, %d programs run (exit 0 %d, lost 79 %d), unavailable 69 %d, --grace refused 64 %d, ended waiting 143 %d, other %d; processes heartbeating after their lockwatch elect exited %d",
			f.Runs, f.Ran, f.Programs, f.Exit0, f.Lost, f.Down, f.Refused, f.Stopped, f.Other, f.AfterExit)
	}
	return fmt.Sprintf("lockwatch run: %d runs, %d ran their program (exit 0 %d, lost 79 %d), held 75 %d, unknown 76 %d, unavailable 69 %d, --grace refused 64 %d, ended waiting 143 %d, other %d; %d heartbeats, %d left out as unsupervised; processes heartbeating after their key expired %d, after their lockwatch run exited %d",
		f.Runs, f.Ran, f.Exit0, f.Lost, f.Held, f.Unknown, f.Down, f.Refused, f.Stopped, f.Other, f.Beats, f.Unsupervised, f.AfterExpiry, f.AfterExit)
}

// writeRuns saves every lockwatch run and every program's work (its
// heartbeats' span), one JSON object per line, beside the history.
func writeRuns(path string, runs []runRec, work []leaseRec) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for i := range runs {
		if err := enc.Encode(map[string]runRec{"run": runs[i]}); err != nil {
			f.Close()
			return err
		}
	}
	for i := range work {
		if err := enc.Encode(map[string]leaseRec{"work": work[i]}); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

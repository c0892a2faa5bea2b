package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// netNS is a holder process's network namespace: the process was started
// in a new one (CLONE_NEWNET, childAttr), and a veth pair joins it to the
// harness's, host on the harness's end and peer on the holder's, a /30 of
// 10.250.0.0/16 of its own (the block from the harness's pid, so that two
// runs at once rarely share one). A cut is a blackhole route: in the
// holder's namespace for what it sends (to host), in the harness's for
// what it receives (to peer). The kernel drops the packets of open
// connections, whose TCP retransmits into nothing and delivers what it
// held back once healed; a new connection from the cut side fails at once
// (a blackhole route answers a local sender's connect with EINVAL).
type netNS struct {
	pid        int
	host, peer string
	dev        string   // the harness's end of the veth pair
	routes     []string // the cuts in place: "in", "out"
}

// netnsAvailable says why holder processes cannot have network namespaces
// here, or nil: it needs root, ip and nsenter, and a veth pair it can make.
func netnsAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	for _, bin := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			return err
		}
	}
	dev := fmt.Sprintf("lwp%d", os.Getpid()%100000)
	if err := system("ip", "link", "add", dev+"a", "type", "veth", "peer", "name", dev+"b"); err != nil {
		return err
	}
	return system("ip", "link", "del", dev+"a")
}

// netnsAttr adds a new network namespace to a holder process's attributes.
func netnsAttr(a *syscall.SysProcAttr) { a.Cloneflags |= syscall.CLONE_NEWNET }

// newNetNS joins process pid's (new, empty) network namespace to the
// harness's as holder number index.
func newNetNS(pid, index int) (*netNS, error) {
	block := os.Getpid() % 250
	n := &netNS{
		pid:  pid,
		host: fmt.Sprintf("10.250.%d.%d", block, 4*index+1),
		peer: fmt.Sprintf("10.250.%d.%d", block, 4*index+2),
		dev:  fmt.Sprintf("lw%dh%d", os.Getpid()%100000, index),
	}
	peerDev := strings.Replace(n.dev, "h", "n", 1)
	steps := [][]string{
		{"ip", "link", "add", n.dev, "type", "veth", "peer", "name", peerDev},
		{"ip", "link", "set", peerDev, "netns", strconv.Itoa(pid)},
		{"ip", "addr", "add", n.host + "/30", "dev", n.dev},
		{"ip", "link", "set", n.dev, "up"},
		n.inside("ip", "addr", "add", n.peer+"/30", "dev", peerDev),
		n.inside("ip", "link", "set", peerDev, "up"),
		n.inside("ip", "link", "set", "lo", "up"),
	}
	for _, s := range steps {
		if err := system(s...); err != nil {
			_ = n.close()
			return nil, err
		}
	}
	return n, nil
}

func (n *netNS) inside(args ...string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(n.pid), "-n"}, args...)
}

func (n *netNS) route(dir, verb string) error {
	if dir == cutOut {
		return system(n.inside("ip", "route", verb, "blackhole", n.host+"/32")...)
	}
	return system("ip", "route", verb, "blackhole", n.peer+"/32")
}

func (n *netNS) cut(dir string) error {
	dirs := []string{dir}
	if dir == cutBoth {
		dirs = []string{cutOut, cutIn}
	}
	for _, d := range dirs {
		if err := n.route(d, "add"); err != nil {
			return err
		}
		n.routes = append(n.routes, d)
	}
	return nil
}

// heal removes the cuts; one that could not be removed stays listed, so
// that close tries again.
func (n *netNS) heal() error {
	var errs []error
	var left []string
	for _, d := range n.routes {
		if err := n.route(d, "del"); err != nil {
			errs = append(errs, err)
			left = append(left, d)
		}
	}
	n.routes = left
	return errors.Join(errs...)
}

// close heals and removes the harness's end of the veth pair (the other
// end goes with it; the namespace goes with its process, which takes the
// pair with it when it exits first). A cut left in the harness's routing
// table is an error; one inside an exited holder's namespace went with it.
func (n *netNS) close() error {
	var errs []error
	for _, d := range n.routes {
		if err := n.route(d, "del"); err != nil && d == cutIn {
			errs = append(errs, err)
		}
	}
	n.routes = nil
	// The kernel tears an exited process's namespace down, and the pair
	// with it, in its own time: a device that vanished meanwhile is gone,
	// not an error.
	if err := system("ip", "link", "del", n.dev); err != nil && system("ip", "link", "show", "dev", n.dev) == nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// system runs one command of the harness's network set-up.
func system(args ...string) error {
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

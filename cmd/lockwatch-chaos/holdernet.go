package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/lockwatch/lockwatch/internal/testenv/faultproxy"
)

// Directions of a holder-partition.
const (
	cutOut  = "out"  // what the holder sends is dropped
	cutIn   = "in"   // what is sent to the holder is dropped
	cutBoth = "both" // both
)

var cutDirections = []string{cutOut, cutIn, cutBoth}

// childNet is how one holder process reaches the servers: through
// forwarders of its own, one per server, so that it can be cut off alone.
// In a network namespace of its own (kernel, when it can be made) the
// forwarders listen on the harness's end of its veth pair and a cut drops
// packets in the kernel; otherwise they listen on loopback and a cut is
// theirs (faultproxy modes), and the run says so.
type childNet struct {
	ns  *netNS // nil: the fallback on loopback
	fwd []*faultproxy.Proxy
}

// forward makes a forwarder to target and returns the address the holder
// dials instead.
func (c *childNet) forward(target string) (string, error) {
	listen := "127.0.0.1:0"
	if c.ns != nil {
		listen = net.JoinHostPort(c.ns.host, "0")
	}
	p, err := faultproxy.LaunchOn(listen, target)
	if err != nil {
		return "", err
	}
	c.fwd = append(c.fwd, p)
	return p.Addr(), nil
}

// rewrite points cfg's addresses at forwarders of c's.
func (c *childNet) rewrite(cfg *childConfig) error {
	var err error
	addr := func(target string) string {
		if err != nil {
			return ""
		}
		var a string
		a, err = c.forward(target)
		return a
	}
	for i, a := range cfg.Lock.Addrs {
		cfg.Lock.Addrs[i] = addr(a)
	}
	cfg.FenceAddr = addr(cfg.FenceAddr)
	cfg.Guard.HTTP = addr(cfg.Guard.HTTP)
	cfg.Guard.GRPC = addr(cfg.Guard.GRPC)
	u, perr := url.Parse(cfg.DSN)
	if perr != nil || u.Host == "" {
		return errors.New("holder-partition needs -dsn as a postgres:// URL")
	}
	u.Host = addr(u.Host)
	cfg.DSN = u.String()
	return err
}

// cut drops what crosses c in direction dir, until heal.
func (c *childNet) cut(dir string) error {
	if c.ns != nil {
		return c.ns.cut(dir)
	}
	mode := faultproxy.Blackhole
	switch dir {
	case cutIn:
		mode = faultproxy.DropReplies
	case cutOut:
		mode = faultproxy.DropRequests
	}
	for _, p := range c.fwd {
		p.Set(mode)
	}
	return nil
}

// heal ends the cut. The forwarders' open connections are reset: they
// dropped bytes, which no TCP connection does (in the kernel, TCP
// retransmits them).
func (c *childNet) heal() error {
	if c.ns != nil {
		return c.ns.heal()
	}
	for _, p := range c.fwd {
		p.Set(faultproxy.Reset)
		p.Set(faultproxy.Pass)
	}
	return nil
}

func (c *childNet) close() error {
	var errs []error
	for _, p := range c.fwd {
		errs = append(errs, p.Close())
	}
	if c.ns != nil {
		errs = append(errs, c.ns.close())
	}
	return errors.Join(errs...)
}

func (c *childNet) String() string {
	if c.ns != nil {
		return fmt.Sprintf("its network namespace (%s, routes)", c.ns.peer)
	}
	return "its forwarders (no network namespace)"
}

//go:build !linux

package main

import (
	"errors"
	"syscall"
)

var errNoNetNS = errors.New("network namespaces are Linux's")

// netNS exists on Linux only; elsewhere holder-partition uses forwarders.
type netNS struct{ host, peer string }

func netnsAvailable() error                   { return errNoNetNS }
func netnsAttr(*syscall.SysProcAttr)          {}
func newNetNS(pid, index int) (*netNS, error) { return nil, errNoNetNS }
func (n *netNS) cut(string) error             { return errNoNetNS }
func (n *netNS) heal() error                  { return errNoNetNS }
func (n *netNS) close() error                 { return errNoNetNS }

package failover

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// The environment of a child process: its role, and what it connects to.
const (
	envRole  = "LOCKWATCH_FAILOVER_ROLE" // etcd-server, lockwatch or etcd
	envAddr  = "LOCKWATCH_FAILOVER_ADDR" // redis-server's address, or etcd's client URL
	envID    = "LOCKWATCH_FAILOVER_ID"   // the candidate's identity
	envDir   = "LOCKWATCH_FAILOVER_DIR"  // the etcd server's data directory
	termTTL  = 2 * time.Second           // both elections' term
	etcdTTL  = 2                         // etcd's session TTL, in seconds: termTTL
	startMax = time.Minute               // bounds the start of a server or a candidate
)

// TestMain runs the benchmark, or, in a child process, the role its
// environment names.
func TestMain(m *testing.M) {
	role := os.Getenv(envRole)
	if role == "" {
		os.Exit(m.Run())
	}
	var err error
	switch role {
	case "etcd-server":
		err = etcdServer(os.Getenv(envDir))
	case "lockwatch":
		err = lockwatchCandidate(os.Getenv(envAddr), os.Getenv(envID))
	case "etcd":
		err = etcdCandidate(os.Getenv(envAddr), os.Getenv(envID))
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	fmt.Fprintln(os.Stderr, role+":", err)
	os.Exit(1)
}

// out writes one line of the child's protocol to its standard output, in
// one write.
var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriter(os.Stdout)}

func emit(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(out.w, format+"\n", args...)
	_ = out.w.Flush()
}

// freePort returns a port free on 127.0.0.1 when asked (another process may
// take it before the server binds it: the parent then fails).
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// etcdServer runs a single-member etcd on 127.0.0.1 with its data in dir,
// writes "ready <client URL>" once it serves, and runs until killed or its
// standard input closes. The defaults stand (heartbeat 100 ms, election
// timeout 1 s, so a minimum lease TTL of 2 s) but for fsync, which is off:
// redis-server runs without persistence too.
func etcdServer(dir string) error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir, cfg.LogLevel, cfg.UnsafeNoFsync = "failover", dir, "error", true
	cu := url.URL{Scheme: "http", Host: "127.0.0.1:" + client}
	pu := url.URL{Scheme: "http", Host: "127.0.0.1:" + peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(startMax):
		return fmt.Errorf("etcd not ready after %v", startMax)
	}
	emit("ready %s", cu.String())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF: the parent is gone
	}()
	select {
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

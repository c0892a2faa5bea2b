package main

import (
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// newLocker returns a Locker on client taking cfg, whose telemetry logs at
// Warn on stderr: the Locker's own lines about losses, unknown acquires and
// force releases are what an operator running the command needs to see.
// Invalid settings (a namespace with braces, a TTL below 10ms) are usage
// errors: Locker.With returns them, where NewLocker would panic.
func newLocker(client redis.UniversalClient, stderr io.Writer, cmd string, cfg lease.Config) (*lease.Locker, error) {
	base := lease.NewLocker(client, lease.Config{Telemetry: stderrTelemetry(stderr)})
	lk, err := base.With(cfg)
	if err != nil {
		_ = base.Close()
		return nil, usageErr(cmd, "%v", err)
	}
	return lk, nil
}

// stderrTelemetry records nothing but Warn logs, on stderr.
func stderrTelemetry(stderr io.Writer) *telemetry.Telemetry {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return telemetry.New(telemetry.Config{Logger: logger})
}

// Defaults shared by the subcommands, so that inspect and release find the
// keys run takes and count under the same lock name.
const (
	// defaultNamespace is lease's own default, so that lockwatch sees the
	// keys of services that use the library with its defaults.
	defaultNamespace = "lockwatch"
	// defaultName is the lock name of run's metrics and logs: a bounded
	// name, never the key.
	defaultName = "lockwatch-run"
)

// connectLocker builds the client the connection flags name, PINGs it, and
// returns a Locker on it taking cfg, and the function that closes both
// (the Locker first: its Close waits for releases and clean-ups in flight).
func connectLocker(conn *connFlags, set map[string]bool, stderr io.Writer, cmd string, cfg lease.Config) (*lease.Locker, func(), error) {
	lk, _, closeAll, err := connect(conn, set, stderr, cmd, cfg)
	return lk, closeAll, err
}

// connect is connectLocker that also returns the client, for a command
// that sends commands of its own beside the Locker's (elect's leader
// record).
func connect(conn *connFlags, set map[string]bool, stderr io.Writer, cmd string, cfg lease.Config) (*lease.Locker, redis.UniversalClient, func(), error) {
	client, label, err := conn.client(set, stderr)
	if err != nil {
		return nil, nil, nil, usageErr(cmd, "%v", err)
	}
	if err := ping(client, label); err != nil {
		_ = client.Close()
		return nil, nil, nil, err
	}
	lk, err := newLocker(client, stderr, cmd, cfg)
	if err != nil {
		_ = client.Close()
		return nil, nil, nil, err
	}
	return lk, client, func() {
		_ = lk.Close()
		_ = client.Close()
	}, nil
}

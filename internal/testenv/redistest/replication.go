package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeChannel carries the writes ReplicaOf uses to see the replication
// stream flowing. PUBLISH is replicated like a write but leaves no key
// behind for a test to trip over.
const probeChannel = "__redistest:replication-probe"

// ReplicaOf makes s a replica of primary and waits until the initial sync has
// finished and the primary is streaming to it: the replica holds everything
// the primary held when ReplicaOf was called, and a WAIT on the primary is
// answered by this replica from the first write on.
func (s *Server) ReplicaOf(primary *Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := s.Do(ctx, "REPLICAOF", "127.0.0.1", primary.Port()); err != nil {
		return fmt.Errorf("redistest: %s: REPLICAOF %s: %w", s.Addr(), primary.Addr(), err)
	}
	// Released only now: until REPLICAOF switched away from it, another
	// server could have taken the port and fed this replica.
	s.closeParked()
	return s.waitReplicating(ctx, primary)
}

// ReplicaOfAddr makes s a replica of the server at addr ("host:port", a
// proxy in front of a primary, say) and waits until its initial sync is
// done. Unlike ReplicaOf it does not wait for the primary to acknowledge
// the stream: the test may reach the primary only through addr.
func (s *Server) ReplicaOfAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("redistest: ReplicaOfAddr: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := s.Do(ctx, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("redistest: %s: REPLICAOF %s: %w", s.Addr(), addr, err)
	}
	s.closeParked()
	return s.waitInfo(ctx, "replication", func(info map[string]string) bool {
		return info["role"] == "slave" && info["master_port"] == port &&
			info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0"
	})
}

// waitReplicating waits until s, a replica of primary, has finished its
// initial sync and primary streams to it (waitAcknowledged).
func (s *Server) waitReplicating(ctx context.Context, primary *Server) error {
	port := strconv.Itoa(primary.announcedPort())
	err := s.waitInfo(ctx, "replication", func(info map[string]string) bool {
		return info["role"] == "slave" &&
			info["master_port"] == port &&
			info["master_link_status"] == "up" &&
			info["master_sync_in_progress"] == "0"
	})
	if err != nil {
		return err
	}
	return s.waitAcknowledged(ctx, primary)
}

// waitAcknowledged waits until primary has an acknowledgement from s for a
// write made after the sync. A finished sync on the replica's side is not
// enough: after a diskless sync a Redis 7 primary holds the command stream
// back until the replica's first REPLCONF ACK (repl_start_cmd_stream_on_ack),
// and writes plus WAIT issued in that window were seen to get no
// acknowledgement within 300ms in about one start in six.
func (s *Server) waitAcknowledged(ctx context.Context, primary *Server) error {
	c := redis.NewClient(&redis.Options{Addr: primary.Addr(), MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	var last string
	for {
		var written *redis.StringCmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Publish(ctx, probeChannel, "")
			// Read before WAIT, whose REPLCONF GETACK also advances the offset.
			written = p.Info(ctx, "replication")
			// Makes replicas acknowledge now rather than on their cron.
			p.Do(ctx, "WAIT", 1, pollInterval.Milliseconds())
			return nil
		})
		if err == nil {
			var info string
			if info, err = c.Info(ctx, "replication").Result(); err == nil {
				target := parseInfo(written.Val())["master_repl_offset"]
				last = replicaEntry(parseInfo(info), s.announcedPort())
				if acked(last, target) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: %s never acknowledged the stream of %s (last error %v, last state %q)",
				s.Addr(), primary.Addr(), err, last)
		case <-time.After(pollInterval):
		}
	}
}

// replicaEntry finds the "slaveN" line of INFO replication on a primary that
// describes the replica listening on port, e.g.
// "ip=127.0.0.1,port=6380,state=online,offset=42,lag=0".
func replicaEntry(info map[string]string, port int) string {
	want := "port=" + strconv.Itoa(port) + ","
	for k, v := range info {
		if strings.HasPrefix(k, "slave") && strings.Contains(v, want) {
			return v
		}
	}
	return ""
}

// acked reports whether a replica entry is online with an acknowledged
// offset of at least target.
func acked(entry, target string) bool {
	fields := make(map[string]string)
	for f := range strings.SplitSeq(entry, ",") {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	offset, err1 := strconv.ParseInt(fields["offset"], 10, 64)
	want, err2 := strconv.ParseInt(target, 10, 64)
	return fields["state"] == "online" && err1 == nil && err2 == nil && offset >= want
}

// StopReplication cuts a replica off from its primary while it stays a
// replica: it keeps the data it has, keeps refusing writes (replica-read-only)
// and keeps serving possibly stale reads (replica-serve-stale-data), but
// receives no further writes. That is a replica partitioned from its primary,
// the state in which a failover loses acknowledged writes.
//
// Redis 7 has no command for this (REPLICAOF NO ONE would already promote
// it), so the replica is pointed at a fake primary: a loopback listener this
// package holds open and never accepts on. Switching primaries does not
// flush the dataset, and a replica only replaces its data after a successful
// sync, which the fake primary never answers. Because the listener keeps the
// port, no other server can take it and sync the replica by accident. The
// listener is released by ReplicaOf, Promote or the test cleanup.
func (s *Server) StopReplication() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	reply, err := s.Do(ctx, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("redistest: %s: INFO replication: %w", s.Addr(), err)
	}
	if text, _ := reply.(string); parseInfo(text)["role"] != "slave" {
		return fmt.Errorf("redistest: %s: StopReplication on a server that is not a replica", s.Addr())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("redistest: listen for the fake primary: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if _, err := s.Do(ctx, "REPLICAOF", "127.0.0.1", port); err != nil {
		_ = l.Close()
		return fmt.Errorf("redistest: %s: REPLICAOF fake primary: %w", s.Addr(), err)
	}
	s.closeParked()
	s.mu.Lock()
	s.parked = l
	s.mu.Unlock()
	// REPLICAOF drops the old link before it replies; this only confirms it.
	want := strconv.Itoa(port)
	return s.waitInfo(ctx, "replication", func(info map[string]string) bool {
		return info["role"] == "slave" && info["master_port"] == want && info["master_link_status"] != "up"
	})
}

// Promote turns a replica into a writable primary with REPLICAOF NO ONE,
// keeping its data, and waits until INFO reports the new role.
func (s *Server) Promote() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := s.Do(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("redistest: %s: REPLICAOF NO ONE: %w", s.Addr(), err)
	}
	s.closeParked()
	return s.waitInfo(ctx, "replication", func(info map[string]string) bool {
		return info["role"] == "master"
	})
}

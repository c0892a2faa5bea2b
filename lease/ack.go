package lease

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/script"
)

// attemptWithAck pipelines the acquire script with WAIT on the node that owns
// the key, so the lock is confirmed on n replicas before the work runs. WAIT
// takes no key, so on Cluster the pipeline goes to the key's master directly.
// Fewer acknowledgements than asked make the acquire unknown: a failover now
// could promote a replica without the lock.
func (lk *Locker) attemptWithAck(ctx context.Context, set *settings, lockKey string, acq script.Call) attemptResult {
	cmd, wait, err := lk.runWithAck(ctx, set, lockKey, acq)
	if err != nil {
		return attemptResult{err: err}
	}
	r := parseAcquire(cmd)
	if r.err != nil || !r.acquired {
		return r
	}
	r.err = ackError(set, wait)
	return r
}

// runWithAck sends call and WAIT in one pipeline to the master of lockKey.
func (lk *Locker) runWithAck(ctx context.Context, set *settings, lockKey string, call script.Call) (cmd, wait *redis.Cmd, err error) {
	var node interface{ Pipeline() redis.Pipeliner } = lk.client
	if cc, ok := lk.client.(*redis.ClusterClient); ok {
		master, err := cc.MasterForKey(ctx, lockKey)
		if err != nil {
			return nil, nil, err
		}
		node = master
	}
	cmd, wait = script.RunWith(ctx, node, call, func(pipe redis.Pipeliner) *redis.Cmd {
		return pipe.Do(ctx, "wait", set.ReplicationAcks, set.ackTimeoutMs)
	})
	script.FollowFailover(lk.client, cmd, wait) // it went to the master's own client
	return cmd, wait, nil
}

// ackError says why WAIT's reply falls short of the replicas asked for, or
// returns nil.
func ackError(set *settings, wait *redis.Cmd) error {
	switch n, err := wait.Int64(); {
	case err != nil:
		return fmt.Errorf("replication ack: %w", err)
	case n < int64(set.ReplicationAcks):
		return fmt.Errorf("replication ack: %d of %d replicas acknowledged within %v", n, set.ReplicationAcks, set.ReplicationTimeout)
	}
	return nil
}

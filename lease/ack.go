package lease

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// attemptWithAck pipelines the acquire script with WAIT on the node that owns
// the key, so the lock is confirmed on n replicas before the work runs. WAIT
// takes no key, so on Cluster the pipeline goes to the key's master directly.
// Fewer acknowledgements than asked make the acquire unknown: a failover now
// could promote a replica without the lock.
func (lk *Locker) attemptWithAck(ctx context.Context, set *settings, keys []string, args []any) attemptResult {
	var node redis.Cmdable = lk.client
	if cc, ok := lk.client.(*redis.ClusterClient); ok {
		master, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return attemptResult{err: err}
		}
		node = master
	}
	run := func(eval func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
		pipe := node.Pipeline()
		acq := eval(pipe)
		wait := pipe.Do(ctx, "wait", set.ackReplicas, set.ackTimeoutMs)
		_, _ = pipe.Exec(ctx)
		return acq, wait
	}
	acq, wait := run(func(p redis.Pipeliner) *redis.Cmd { return acquireScript.EvalSha(ctx, p, keys, args...) })
	if isNoScript(acq.Err()) {
		acq, wait = run(func(p redis.Pipeliner) *redis.Cmd { return acquireScript.Eval(ctx, p, keys, args...) })
	}
	r := parseAcquire(acq)
	if r.err != nil || !r.acquired {
		return r
	}
	switch n, err := wait.Int64(); {
	case err != nil:
		r.err = fmt.Errorf("replication ack: %w", err)
	case n < int64(set.ackReplicas):
		r.err = fmt.Errorf("replication ack: %d of %d replicas acknowledged within %v", n, set.ackReplicas, set.ackTimeout)
	}
	return r
}

package election_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
)

// addr is the Redis the examples use; the test binary points it at a
// private loopback redis-server.
var addr = "localhost:6379"

func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()

	e, err := election.New(locker, "example-scheduler", election.Config{Identity: "replica-1"})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	err = e.Run(ctx, func(ctx context.Context, t election.Term) error {
		// Lead until ctx ends (the term is lost or Run's context ends), giving
		// the resource t.Token with every write. Returning ends Run: the term is
		// resigned and the next candidate starts.
		fmt.Println("leading as", t.Identity, "with a fencing token:", t.Token.Fence == t.Fence)
		return nil
	})
	fmt.Println("run:", err)
	// Output:
	// leading as replica-1 with a fencing token: true
	// run: <nil>
}

func ExampleElection_Observe() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	e, _ := election.New(locker, "example-observed", election.Config{Identity: "replica-2"})

	_, err := e.Observe(ctx)
	fmt.Println("before:", errors.Is(err, election.ErrNoLeader))
	_ = e.Run(ctx, func(ctx context.Context, t election.Term) error {
		leader, err := e.Observe(ctx)
		fmt.Println("during:", leader.Identity, leader.Term == t.Fence, err)
		return nil
	})
	_, err = e.Observe(ctx)
	fmt.Println("after:", errors.Is(err, election.ErrNoLeader))
	// Output:
	// before: true
	// during: replica-2 true <nil>
	// after: true
}

func ExampleConfig() {
	ctx, cancel := context.WithCancel(context.Background())
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()
	locker := lease.NewLocker(client, lease.Config{TTL: 5 * time.Second})
	defer locker.Close()
	e, _ := election.New(locker, "example-callbacks", election.Config{
		Identity:         "replica-3",
		OnStartedLeading: func(election.Term) { fmt.Println("started leading") },
		OnStoppedLeading: func(_ election.Term, reason error) {
			fmt.Println("stopped leading:", errors.Is(reason, context.Canceled))
		},
	})
	err := e.Run(ctx, func(ctx context.Context, _ election.Term) error {
		cancel() // a shutdown: Run's context ends while leading
		<-ctx.Done()
		return ctx.Err()
	})
	fmt.Println("run:", err)
	// Output:
	// started leading
	// stopped leading: true
	// run: context canceled
}

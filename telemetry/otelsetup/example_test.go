package otelsetup_test

import (
	"context"
	"log"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
)

// A service without an OpenTelemetry set-up of its own: global providers
// with a Prometheus endpoint, which lockwatch's default telemetry reports
// to.
func Example() {
	ctx := context.Background()
	providers, err := otelsetup.New(ctx, otelsetup.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer providers.Shutdown(ctx)
	providers.SetGlobal()

	locker := lease.NewLocker(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), lease.Config{})
	defer locker.Close()
	http.Handle("GET /metrics", providers.Handler())
}

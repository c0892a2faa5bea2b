package telemetry_test

import (
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// One Telemetry for a service's Locker and its fenced stores, on the
// service's own meter provider and logger.
func ExampleNew() {
	mp := sdkmetric.NewMeterProvider()
	tel := telemetry.New(telemetry.Config{MeterProvider: mp, Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil))})

	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	locker := lease.NewLocker(client, lease.Config{Telemetry: tel})
	defer locker.Close()
	ledger := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Telemetry: tel})
	_ = ledger
}

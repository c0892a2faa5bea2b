package bench

import (
	"os"
	"testing"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// sharedAddr is the redis-server that the cycle and HTTP benchmarks share,
// so that every figure they report, and the floors they are divided by,
// come from the same server in the same run. Benchmarks that stop or fill
// their server start a private one.
var sharedAddr string

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, func(a string) { sharedAddr = a })) }

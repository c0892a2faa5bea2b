package fence

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One Lua script per operation, run by redis.Script.Run: EVALSHA, and EVAL
// with the body when the server answers NOSCRIPT (after a restart or a
// failover the script cache is empty). The key is passed as KEYS[1], so
// Cluster routes the call to the key's shard.
var (
	//go:embed scripts/tokens.lua
	tokensSrc string // the token comparison, shared by both scripts
	//go:embed scripts/write.lua
	writeSrc string
	//go:embed scripts/admit.lua
	admitSrc string

	writeScript = redis.NewScript(tokensSrc + writeSrc)
	admitScript = redis.NewScript(tokensSrc + admitSrc)
)

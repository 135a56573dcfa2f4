package workload

import (
	"fmt"
	"os"
	"strings"

	"github.com/mailbench/mailbench/configs"
)

// LoadNamed reads a workload file, or a config shipped inside the binary by
// its name ("quick", "enterprise.toml"); "" is "quick". A file of that name
// wins over a shipped config.
func LoadNamed(arg string) (*Config, error) {
	if arg == "" {
		arg = "quick"
	}
	if _, err := os.Stat(arg); err == nil {
		return Load(arg)
	}
	if data, ok := configs.Lookup(arg); ok {
		return ParseConfig("configs/"+strings.TrimSuffix(arg, ".toml")+".toml", data)
	}
	return nil, fmt.Errorf("%s: no such file, and not a shipped config (shipped: %v)", arg, configs.Names())
}

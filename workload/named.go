package workload

import (
	"fmt"
	"os"
	"strings"

	"github.com/mailbench/mailbench/configs"
)

// LoadNamed reads a workload file, or a config shipped inside the binary by
// its name ("quick", "enterprise.toml"); "" is "quick". A file of that name
// wins over a shipped config. o is laid over it before the validation, as
// Load does.
func LoadNamed(arg string, o Overrides) (*Config, error) {
	if arg == "" {
		arg = "quick"
	}
	if _, err := os.Stat(arg); err == nil {
		return Load(arg, o)
	}
	if data, ok := configs.Lookup(arg); ok {
		return parse("configs/"+strings.TrimSuffix(arg, ".toml")+".toml", data, o)
	}
	return nil, fmt.Errorf("%s: no such file, and not a shipped config (shipped: %v)", arg, configs.Names())
}

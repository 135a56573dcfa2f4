package configs_test

import (
	"fmt"
	"strings"

	"github.com/mailbench/mailbench/configs"
)

// The shipped workloads are in the binary; a name selects one.
func ExampleLookup() {
	data, ok := configs.Lookup("quick")
	fmt.Println(ok, strings.Contains(string(data), "[load]"))
	_, ok = configs.Lookup("no-such-config")
	fmt.Println(ok)
	// Output:
	// true true
	// false
}

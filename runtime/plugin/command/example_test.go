package command_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentrt/agentrt/runtime/plugin/command"
)

// ExampleTool runs model-written Python in CPython for WASI. It needs $AGENTRT_PYTHON_WASM (make setup), so it is
// compiled but not run by go test; TestPythonSandbox checks the same behaviour.
func ExampleTool() {
	ctx := context.Background()
	wasm, err := os.ReadFile(os.Getenv("AGENTRT_PYTHON_WASM"))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := command.Python()                                    // execute_python_code: python -I -c {code}
	cfg.CacheDir = os.ExpandEnv("$HOME/.cache/agentrt/wazero") // compile once, load in < 1 s afterwards
	tool, err := command.New(ctx, wasm, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tool.Close(ctx)

	args, _ := json.Marshal(map[string]string{"code": "from fractions import Fraction\nprint(Fraction(7, 8) + Fraction(1, 2))"})
	res, err := tool.Call(ctx, "execute_python_code", args)
	if err != nil { // only the caller's ctx ending or a closed tool
		fmt.Println(err)
		return
	}
	fmt.Println(*res.Text, res.IsError) // 11/8 false

	args, _ = json.Marshal(map[string]string{"code": "open('/etc/passwd')"})
	res, _ = tool.Call(ctx, "execute_python_code", args)
	fmt.Println(res.IsError) // true: a FileNotFoundError traceback the model reads
}

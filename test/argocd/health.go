// Package argocd runs the Argo CD health check hivekeeper ships
// (deploy/argocd/health.lua) the way Argo CD runs a resource
// customization: the object as a Lua table named obj, the script's
// returned table read for status and message. Tests use it on objects
// in every phase, and the status differential on what both operators
// wrote.
package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	lua "github.com/yuin/gopher-lua"
)

// Script is the path of the shipped health check.
func Script() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "deploy", "argocd", "health.lua")
}

// Health runs the script on obj (an object as the API server returns it,
// decoded from JSON) and returns Argo CD's health status and message.
func Health(script string, obj map[string]any) (status, message string, err error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	// The libraries Argo CD opens for a health script.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		return "", "", err
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the script returned %s, want a table", L.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message")), nil
}

// ReadScript reads the shipped health check.
func ReadScript() (string, error) {
	b, err := os.ReadFile(Script())
	return string(b), err
}

// toLua converts a JSON-decoded value: objects become tables keyed by
// name, arrays tables indexed from 1, numbers Lua numbers.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case map[string]any:
		t := L.NewTable()
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.RawSetString(k, toLua(L, v[k]))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

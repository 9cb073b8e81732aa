package command_test
import ("context";"encoding/json";"os";"testing";"time";"path/filepath"
 "github.com/agentrt/agentrt/runtime/plugin/command")
func TestSmoke(t *testing.T){
 ctx:=context.Background()
 wasm,_:=os.ReadFile(os.Getenv("AGENTRT_PYTHON_WASM"))
 cfg:=command.Python(); cfg.CacheDir=filepath.Join(os.Getenv("AGENTRT_CACHE"),"wazero-test"); cfg.Timeout=2*time.Second; cfg.MaxMemoryMB=64
 st:=time.Now(); tool,err:=command.New(ctx,wasm,cfg); t.Log("load",time.Since(st),err)
 for _,c:=range []string{`print("hello", 6*7)`,`1/0`,`while True: pass`,`bytearray(1<<30)`,`open("/etc/passwd").read()`,`import socket; socket.create_connection(("1.1.1.1",80))`,`open("/tmp/x","w").write("hi"); print(open("/tmp/x").read())`,`import os; print(os.listdir("/tmp"), os.listdir("/"))`,`print(open("/tmp/../etc/passwd").read())`,`import time,random; print(time.time(), random.random())`,`a=[]
while True: a.append(bytearray(10**6))`, `print("x"*100000)`,`import subprocess; subprocess.run(["ls"])`,`import json,re,math,collections,itertools,fractions,decimal,statistics,sqlite3,datetime;print("ok")`}{
  args,_:=json.Marshal(map[string]string{"code":c})
  st:=time.Now(); r,err:=tool.Call(ctx,"execute_python_code",args)
  txt:=""; if r.Text!=nil {txt=*r.Text}; if len(txt)>600 {txt=txt[:300]+"..."+txt[len(txt)-300:]}
  t.Logf("%q -> %v err=%v isErr=%v\n%s", c, time.Since(st), err, r.IsError, txt)
 }
}

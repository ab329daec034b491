# Groups `go tool nm -size` lines by package; see size-by-package.sh.
function hex(s,  i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
function group(p) {
  if (p ~ /^k8s.io\/api\//) return "k8s.io/api (all groups)"
  if (p ~ /^k8s.io\/client-go\/applyconfigurations/) return "k8s.io/client-go/applyconfigurations"
  if (p ~ /^k8s.io\/client-go\/kubernetes/) return "k8s.io/client-go/kubernetes (typed clients, scheme)"
  if (p ~ /^k8s.io\/client-go\/tools\/record/) return "k8s.io/client-go/tools/record"
  if (p ~ /^k8s.io\/client-go/) return "k8s.io/client-go (rest, transport, clientcmd, other)"
  if (p ~ /^github.com\/google\/cel-go/ || p ~ /^github.com\/antlr4-go/ || p ~ /^cel.dev/) return "cel-go and antlr"
  if (p ~ /^github.com\/google\/gnostic/ || p ~ /^k8s.io\/kube-openapi/) return "gnostic and kube-openapi"
  if (p ~ /^k8s.io\/apimachinery/) return "k8s.io/apimachinery"
  if (p ~ /^google.golang.org\/grpc/) return "google.golang.org/grpc"
  if (p ~ /protobuf/) return "protobuf (google and gogo)"
  if (p ~ /^k8s.io\/component-base/) return "k8s.io/component-base"
  if (p ~ /^github.com\/hangwatch/) return "hangwatch's own"
  if (p ~ /^github.com\/prometheus/) return "prometheus client"
  if (p ~ /yaml/) return "yaml libraries"
  if (p == "func") return "go:func.* (function data)"
  return p
}
$3 != "U" && hex($1) < bss {
  n = $4; sub(/^type:/, "", n); sub(/^go:/, "", n); sub(/^\*/, "", n)
  if (match(n, /\/[^\/]*$/)) { pre = substr(n, 1, RSTART); rest = substr(n, RSTART + 1) } else { pre = ""; rest = n }
  d = index(rest, "."); if (d) rest = substr(rest, 1, d - 1)
  s[group(pre rest)] += $2
}
END { for (g in s) printf "%d\t%s\n", s[g], g }

package wiring

import (
	"fmt"
	"net/textproto"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// How a header value from a Secret reaches ToolHive's runner, as
// ToolHive's operator wires it at the pinned release: the RunConfig maps
// the header to a secret name, HEADER_FORWARD_<header>_<proxy>; with
// EnvSecretsProvider=environment the runner reads that secret
// from the variable EnvSecretPrefix+<name>, which the proxy
// container gets from a secretKeyRef. The value itself is never in the
// RunConfig.
const headerSecretPrefix = "HEADER_FORWARD_"

// restrictedHeaders are the headers ToolHive's runner refuses to add
// (hop-by-hop, framing, proxy and client-identity headers): a RunConfig
// naming one stops the runner at start, so hivekeeper refuses it first.
// Canonical form.
var restrictedHeaders = map[string]bool{
	"Host": true, "Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Http2-Settings": true, "Proxy-Authorization": true, "Proxy-Authenticate": true, "Proxy-Connection": true,
	"Transfer-Encoding": true, "Content-Length": true, "Forwarded": true, "X-Forwarded-For": true,
	"X-Forwarded-Host": true, "X-Forwarded-Proto": true, "X-Real-Ip": true,
}

// envToken is how ToolHive spells a header or proxy name inside an
// environment variable name: upper case, every character other than
// A-Z, 0-9 and '_' replaced by '_'.
func envToken(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, s)
}

// headerSecretName is the secret name the RunConfig gives a header from a
// Secret; the proxy container's variable is EnvSecretPrefix + it.
func headerSecretName(proxy, header string) string {
	return headerSecretPrefix + envToken(header) + "_" + envToken(proxy)
}

// HeaderForward maps spec.headerForward onto the RunConfig's
// header_forward and the proxy container's env (the secrets provider
// switch, then one secretKeyRef variable per header from a Secret, in the
// spec's order). Both are nil when no header is configured, as ToolHive's
// operator leaves them out.
func HeaderForward(p *thv1.MCPRemoteProxy) (*schema.HeaderForward, []corev1.EnvVar, error) {
	hf := p.Spec.HeaderForward
	if hf == nil || (len(hf.AddPlaintextHeaders) == 0 && len(hf.AddHeadersFromSecret) == 0) {
		return nil, nil, nil
	}
	if err := CheckHeaderForward(p.Name, hf); err != nil {
		return nil, nil, err
	}
	rc := &schema.HeaderForward{}
	if len(hf.AddPlaintextHeaders) > 0 {
		rc.AddPlaintextHeaders = make(map[string]string, len(hf.AddPlaintextHeaders))
		for k, v := range hf.AddPlaintextHeaders {
			rc.AddPlaintextHeaders[k] = v
		}
	}
	var env []corev1.EnvVar
	if len(hf.AddHeadersFromSecret) > 0 {
		rc.AddHeadersFromSecret = make(map[string]string, len(hf.AddHeadersFromSecret))
		env = append(env, corev1.EnvVar{Name: EnvSecretsProvider, Value: SecretsProviderFromEnv})
		for _, h := range hf.AddHeadersFromSecret {
			name := headerSecretName(p.Name, h.HeaderName)
			rc.AddHeadersFromSecret[h.HeaderName] = name
			env = append(env, SecretEnv(EnvSecretPrefix+name, h.ValueSecretRef.Name, h.ValueSecretRef.Key))
		}
	}
	return rc, env, nil
}

// CheckHeaderForward refuses what would make the runner refuse to start,
// fail every request, or pick a value at random:
//   - a name that is not an HTTP token, or a literal value with control
//     characters (Go's HTTP client refuses to send either);
//   - a header the runner refuses to add (restrictedHeaders);
//   - two spellings of one header (x-api-key and X-API-Key): the runner
//     keeps one of them, which one depends on map order. The same
//     spelling in both lists is fine: the Secret's value wins, as in
//     ToolHive;
//   - two headers from Secrets whose environment variables would have
//     the same name (X-Api-Key and X_Api_Key): both would get one value.
func CheckHeaderForward(proxy string, hf *thv1.HeaderForwardConfig) error {
	const field = "spec.headerForward"
	fail := func(format string, args ...any) error {
		return &headerForwardError{msg: fmt.Sprintf(field+"."+format, args...)}
	}
	spelling := map[string]string{} // canonical → the spelling first seen
	seen := func(list, name string) error {
		if !httpguts.ValidHeaderFieldName(name) {
			return fail("%s: %q is not a valid HTTP header name", list, name)
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if restrictedHeaders[canon] {
			return fail("%s: ToolHive's runner refuses to add header %s", list, canon)
		}
		if other, ok := spelling[canon]; ok && other != name {
			return fail("%s: %q and %q are the same header; name it once", list, other, name)
		}
		spelling[canon] = name
		return nil
	}
	names := make([]string, 0, len(hf.AddPlaintextHeaders))
	for k := range hf.AddPlaintextHeaders {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := seen("addPlaintextHeaders", k); err != nil {
			return err
		}
		if !httpguts.ValidHeaderFieldValue(hf.AddPlaintextHeaders[k]) {
			return fail("addPlaintextHeaders: the value of %s has control characters", k)
		}
	}
	envOf := map[string]string{}
	for _, h := range hf.AddHeadersFromSecret {
		if h.ValueSecretRef == nil {
			return fail("addHeadersFromSecret: %s has no valueSecretRef", h.HeaderName)
		}
		if err := seen("addHeadersFromSecret", h.HeaderName); err != nil {
			return err
		}
		env := EnvSecretPrefix + headerSecretName(proxy, h.HeaderName)
		if other, ok := envOf[env]; ok && other != h.HeaderName {
			return fail("addHeadersFromSecret: %s and %s would share the variable %s; rename one", other, h.HeaderName, env)
		}
		envOf[env] = h.HeaderName
	}
	return nil
}

// headerForwardError is a refused spec.headerForward.
type headerForwardError struct{ msg string }

func (e *headerForwardError) Error() string { return e.msg }

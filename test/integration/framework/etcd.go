package framework

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// StoredAPIVersion is the apiVersion an object of a custom resource is
// stored as in etcd, read through etcd's JSON gateway (/v3/kv/range) at the
// key the API server uses: /registry/<group>/<resource>/<namespace>/<name>.
// It is what a storage-version migration changes, and nothing the API
// server serves shows it.
func (s *Server) StoredAPIVersion(group, resource, namespace, name string) (string, error) {
	key := fmt.Sprintf("/registry/%s/%s/%s/%s", group, resource, namespace, name)
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	resp, err := http.Post(s.EtcdURL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("etcd range %s: %w", key, err)
	}
	if len(out.Kvs) != 1 {
		return "", fmt.Errorf("etcd has no %s", key)
	}
	raw, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		return "", err
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("stored %s is not JSON: %w", key, err)
	}
	return obj.APIVersion, nil
}

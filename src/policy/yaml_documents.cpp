#include "policy/yaml_documents.h"

#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>

namespace superagent::policy {
namespace {

// Only where each document starts (and its first node, where a person would point) matters
// here; the nodes themselves come from YAML::Load.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  std::vector<YAML::Mark> first_nodes;
  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    first_nodes.push_back(YAML::Mark::null_mark());
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& m) {
    if (!first_nodes.empty() && first_nodes.back().is_null()) first_nodes.back() = m;
  }
};

constexpr int kMaxDocuments = 8;

}  // namespace

YamlDocuments LoadYamlDocuments(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts handler;
  YamlDocuments out;
  while (out.count < kMaxDocuments && parser.HandleNextDocument(handler)) {
    ++out.count;
    const auto& s = handler.starts;
    // A document that starts where the previous one did consumed nothing: LoadAll would loop.
    if (s.size() >= 2 && s[s.size() - 1].pos == s[s.size() - 2].pos)
      throw YAML::ParserException(s.back(), "unexpected character here: it cannot start a YAML document");
  }
  if (out.count == 0) return out;
  if (out.count > 1 && handler.starts.size() > 1)
    out.second_mark = handler.first_nodes[1].is_null() ? handler.starts[1] : handler.first_nodes[1];
  out.first = YAML::Load(text);
  return out;
}

}  // namespace superagent::policy

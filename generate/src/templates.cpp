#include "templates.h"

#include <stdexcept>

#include "templates_embedded.h"  // generated: kTemplates[] = {name, text} from templates/

namespace skt::gen {

const std::string& template_text(const std::string& name) {
  static const std::map<std::string, std::string> all = [] {
    std::map<std::string, std::string> m;
    for (const auto& t : kTemplates) m[t.name] = t.text;
    return m;
  }();
  auto it = all.find(name);
  if (it == all.end()) throw std::logic_error("no template " + name);
  return it->second;
}

std::string render(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) throw std::logic_error("template: '{{' without '}}'");
    std::string key = text.substr(open + 2, close - open - 2);
    auto it = values.find(key);
    if (it == values.end()) throw std::logic_error("template: no value for {{" + key + "}}");
    out.append(text, i, open - i);
    out += it->second;
    i = close + 2;
  }
  return out;
}

}  // namespace skt::gen

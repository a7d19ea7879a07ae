// Fuzz test of the task-file parsers: mutates copies of the pilot tasks and the fixtures and runs
// `d2k --dataset TMP tasks validate NAME` on each, in a child process with an address-space
// limit. Fails on a crash (a signal, or an exit code other than 0/1), on an input that takes
// more than --case-seconds of CPU (a hang is killed after --hang-seconds of wall time), or on one
// whose peak RSS exceeds --max-rss-mb. First replays the
// regression corpus (tests/fixtures/fuzz/regressions.json: the inputs of issue #13, each with the
// message it must produce), then random mutations from a fixed seed until the time budget ends.
//
//   task_fuzz --d2k PATH --source DIR [--seconds 90] [--seed 1] [--out DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string d2k, source, out;
  double seconds = 90, case_seconds = 5, hang_seconds = 60;
  std::uint64_t seed = 1;
  long max_rss_mb = 512, address_space_mb = 4096;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t k = 0; k < n; ++k) out += s;
  return out;
}

// ---- One run of the validator ----

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // user + system: the bound, independent of the machine's load
  long max_rss_kb = 0;
  bool timed_out = false;
  std::string output;
};

RunResult run_validate(const Options& o, const fs::path& dataset, const std::string& task, const fs::path& log) {
  RunResult r;
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    // The ceiling that keeps a runaway input from taking the machine down; the test's own bound
    // is the peak RSS checked below.
    const rlim_t as = static_cast<rlim_t>(o.address_space_mb) << 20;
    const rlimit lim{as, as};
    setrlimit(RLIMIT_AS, &lim);
    const std::string ds = dataset.string();
    execl(o.d2k.c_str(), o.d2k.c_str(), "--dataset", ds.c_str(), "tasks", "validate", task.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  for (;;) {
    const pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    // Wall time only guards against a hang (a loaded CI machine slows every case alike).
    if (std::chrono::duration<double>(Clock::now() - start).count() > o.hang_seconds && !r.timed_out) {
      r.timed_out = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.max_rss_kb = ru.ru_maxrss;
  r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  std::string out = read(log);
  r.output = out.size() > 4000 ? out.substr(0, 4000) + "\n[...]" : out;
  return r;
}

// What every input must satisfy: an ordinary exit (0 valid, 1 invalid), in time, in memory.
std::string judge(const Options& o, const RunResult& r) {
  if (r.timed_out) return fmt::format("still running after {} s (killed)", o.hang_seconds);
  if (r.signal) return fmt::format("killed by signal {} ({})", r.signal, strsignal(r.signal));
  if (r.exit_code != 0 && r.exit_code != 1) return fmt::format("exit code {} (0 or 1 expected)", r.exit_code);
  if (r.cpu_seconds > o.case_seconds) return fmt::format("took {:.2f} s of CPU, over {} s", r.cpu_seconds, o.case_seconds);
  if (r.max_rss_kb > o.max_rss_mb * 1024) return fmt::format("peak RSS {} MiB over {} MiB", r.max_rss_kb / 1024, o.max_rss_mb);
  return "";
}

// ---- A scratch dataset holding one task ----

struct Scratch {
  fs::path root;
  Scratch(const Options& o, const std::string& tag) {
    root = fs::temp_directory_path() / fmt::format("d2k_fuzz_{}_{}", getpid(), tag);
    fs::remove_all(root);
    fs::create_directories(root);
    fs::copy_file(fs::path(o.source) / "dataset/design_levels.json", root / "design_levels.json");
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  // A fresh copy of `base` (a task folder) as root/<name>.
  fs::path task(const fs::path& base, const std::string& name) const {
    const fs::path dir = root / name;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
    // Starters live in sub-folders (starter/<track>/): the copy is recursive.
    fs::copy(base, dir, fs::copy_options::recursive);
    return dir;
  }
};

// ---- Regression corpus ----

// Expands the generators of a corpus value: {"$repeat": [s, n]}, {"$concat": [...]},
// {"$keys": n} (an object of n keys); anything else is kept.
json expand(const json& v) {
  if (v.is_object() && v.size() == 1) {
    if (v.contains("$repeat")) return repeat(v["$repeat"][0].get<std::string>(), v["$repeat"][1].get<std::size_t>());
    if (v.contains("$concat")) {
      std::string s;
      for (const auto& p : v["$concat"]) s += expand(p).get<std::string>();
      return s;
    }
    if (v.contains("$keys")) {
      const auto n = v["$keys"].get<std::size_t>();
      // ordered_json inserts in linear time per key: build the text instead.
      std::string text = "{";
      for (std::size_t k = 0; k < n; ++k) text += fmt::format("{}\"k{}\": 0", k ? ", " : "", k);
      return json{{"$raw", text + "}"}};
    }
  }
  return v;
}

// Sets `pointer` of the JSON text `doc` to `value` (a JSON value) or to `raw` text (spliced in
// after a placeholder, so that text nlohmann would refuse to build can still be written).
std::string set_at(const std::string& doc, const std::string& pointer, const json* value, const std::string* raw) {
  json j = json::parse(doc);
  const std::string placeholder = "\"@@RAW@@\"";
  j[json::json_pointer(pointer)] = raw ? json("@@RAW@@") : *value;
  std::string text = j.dump(1);
  if (raw) text.replace(text.find(placeholder), placeholder.size(), *raw);
  return text;
}

std::string apply_case(const json& c, const fs::path& dir) {
  const std::string file = c["file"].get<std::string>();
  const fs::path path = dir / file;
  const std::string op = c["op"].get<std::string>();
  if (op == "set") {
    const std::string doc = read(path);
    if (c.contains("raw")) {
      const std::string raw = expand(c["raw"]).get<std::string>();
      write(path, set_at(doc, c["pointer"].get<std::string>(), nullptr, &raw));
    } else {
      const json v = expand(c["value"]);
      if (v.is_object() && v.contains("$raw")) {
        const std::string raw = v["$raw"].get<std::string>();
        write(path, set_at(doc, c["pointer"].get<std::string>(), nullptr, &raw));
      } else {
        write(path, set_at(doc, c["pointer"].get<std::string>(), &v, nullptr));
      }
    }
  } else if (op == "fill") {
    json j = json::parse(read(path));
    json& obj = j[json::json_pointer(c["pointer"].get<std::string>())];
    const std::string key = c["key"].get<std::string>();
    const int count = c["count"].get<int>();
    for (int k = 0; k < count; ++k) {
      json v = c["value"];
      // "chain": each expr names the next key (the last names H): evaluation order reversed.
      if (c.value("chain", false)) v["expr"] = k + 1 < count ? fmt::format("{}{} + 1", key, k + 1) : "H + 1";
      obj[fmt::format("{}{}", key, k)] = v;
    }
    write(path, j.dump(1));
  } else if (op == "lines") {
    std::string text;
    for (int k = 0; k < c["count"].get<int>(); ++k)
      text += fmt::format("{{\"uuid\": \"w{}\", \"role\": \"{}\", \"axes\": {{\"T\": 7, \"H\": 264}}}}\n", k,
                          k % 2 ? "bench" : "check");
    write(path, text);
  } else if (op == "replace_text") {
    std::string doc = read(path);
    const std::string find = c["find"].get<std::string>();
    const auto at = doc.find(find);
    if (at == std::string::npos) return "corpus case: text not found: " + find;
    doc.replace(at, find.size(), c["replace"].get<std::string>());
    write(path, doc);
  } else if (op == "make_folder") {
    fs::remove(path);
    fs::create_directories(path);
  } else {
    return "corpus case: unknown op " + op;
  }
  if (c.contains("also"))
    for (const auto& more : c["also"])
      if (auto p = apply_case(more, dir); !p.empty()) return p;
  return "";
}

int run_corpus(const Options& o, const Scratch& s) {
  const json corpus = json::parse(read(fs::path(o.source) / "tests/fixtures/fuzz/regressions.json"));
  const fs::path base = fs::path(o.source) / "tests/fixtures/tasks/good_task";
  int failures = 0;
  for (const auto& c : corpus["cases"]) {
    const std::string name = c["name"].get<std::string>();
    const fs::path dir = s.task(base, "good_task");
    std::string problem = apply_case(c, dir);
    RunResult r;
    if (problem.empty()) {
      r = run_validate(o, s.root, "good_task", s.root / "log.txt");
      problem = judge(o, r);
    }
    const int want_rc = c.value("rc", 1);
    if (problem.empty() && r.exit_code != want_rc)
      problem = fmt::format("exit code {}, {} expected", r.exit_code, want_rc);
    if (problem.empty() && r.output.find(c["expect"].get<std::string>()) == std::string::npos)
      problem = "missing expected message: " + c["expect"].get<std::string>();
    if (problem.empty() && c.contains("forbid") && r.output.find(c["forbid"].get<std::string>()) != std::string::npos)
      problem = "has forbidden text: " + c["forbid"].get<std::string>();
    fmt::print("{} corpus {:<40} {:6.2f} s CPU {:5} MiB\n", problem.empty() ? "ok  " : "FAIL", name, r.cpu_seconds,
               r.max_rss_kb / 1024);
    if (!problem.empty()) {
      ++failures;
      fmt::print("     {}\n     output:\n{}\n", problem, r.output);
    }
  }
  return failures;
}

// ---- Random mutations ----

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }
  bool coin() { return rng_() & 1; }

  // One mutation of `text` (a JSON file or a JSONL file); `what` names it.
  std::string mutate(const std::string& text, std::string& what) {
    switch (below(12)) {
      case 0: what = "byte flips"; return flip_bytes(text);
      case 1: what = "truncation"; return text.substr(0, below(text.size() + 1));
      case 2: what = "invalid UTF-8"; return insert(text, pick({"\xff", "\xc3", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80", std::string("\0", 1)}));
      case 3: what = "huge number"; return replace_number(text);
      case 4: what = "key duplication"; return duplicate_key(text);
      default: break;
    }
    // Structure-aware mutations of one JSON value (a JSONL file: of one line).
    std::vector<std::string> lines;
    const bool jsonl = text.find("\n{") != std::string::npos && text.front() == '{' && text.find("\n  ") == std::string::npos;
    if (jsonl) {
      std::size_t start = 0;
      while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
      }
      if (lines.empty()) return text;
      const std::size_t k = below(lines.size());
      lines[k] = mutate_json(lines[k], what, /*one_line=*/true);
      std::string out;
      for (const auto& l : lines) out += l + "\n";
      return out;
    }
    return mutate_json(text, what, false);
  }

 private:
  std::string pick(std::initializer_list<std::string> options) {
    std::vector<std::string> v(options);
    return v[below(v.size())];
  }

  std::string insert(std::string s, const std::string& what) {
    s.insert(below(s.size() + 1), what);
    return s;
  }

  std::string flip_bytes(std::string s) {
    const std::size_t n = 1 + below(8);
    for (std::size_t k = 0; k < n && !s.empty(); ++k) s[below(s.size())] = static_cast<char>(rng_());
    return s;
  }

  std::string huge_number() {
    return pick({"1e309", "-1e400", "1e-400", "123456789012345678901234567890", "9223372036854775808",
                 "-9223372036854775809", "18446744073709551616", "4294967296", "-1", "0", "1e18", "2.5",
                 "9007199254740993", "NaN", "Infinity"});
  }

  std::string replace_number(std::string s) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < s.size(); ++i)
      if ((s[i] >= '0' && s[i] <= '9') && (i == 0 || !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '.' || s[i - 1] == '_')))
        starts.push_back(i);
    if (starts.empty()) return s;
    const std::size_t i = starts[below(starts.size())];
    std::size_t e = i;
    while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.' || s[e] == 'e' || s[e] == '-')) ++e;
    s.replace(i, e - i, huge_number());
    return s;
  }

  // Repeats one `"key": value` pair textually (a JSON DOM cannot hold duplicate keys).
  std::string duplicate_key(std::string s) {
    std::vector<std::size_t> keys;
    for (std::size_t i = s.find("\":"); i != std::string::npos; i = s.find("\":", i + 1)) keys.push_back(i);
    if (keys.empty()) return s;
    const std::size_t colon = keys[below(keys.size())];
    const std::size_t open = s.rfind('"', colon - 1);
    if (open == std::string::npos) return s;
    const std::string key = s.substr(open, colon + 2 - open);
    s.insert(open, key + " " + pick({"0", "null", "\"x\"", "{}", "[]", "1e300"}) + ", ");
    return s;
  }

  json random_scalar() {
    switch (below(10)) {
      case 0: return nullptr;
      case 1: return coin();
      case 2: return json::parse(pick({"0", "-1", "9223372036854775807", "-9223372036854775808", "1e300", "0.5"}));
      case 3: return "";
      case 4: return std::string(1 + below(200000), 'x');
      case 5: return json::array();
      case 6: return json::object();
      case 7: return deep_expression();
      case 8: return long_expression();
      default: return pick({"T", "H", "bfloat16", "normal", "check", "bench", "allclose", "((", "T +", "ceil_div(T)", "1/0", "sqrt(0-1)", "log2(0)"});
    }
  }

  std::string deep_expression() {
    const std::size_t depth = 10 + below(5000);
    switch (below(3)) {
      case 0: return repeat("(", depth) + "T" + repeat(")", depth);
      case 1: return repeat("-", depth) + "T";
      default: return repeat("min(", depth) + "T" + repeat(")", depth);
    }
  }

  std::string long_expression() {
    std::string e(1, 'T');
    e += repeat(pick({" + T", "*H", " - 1", " && T"}), 10 + below(200000));
    return e;
  }

  json deep_value() {
    const std::size_t depth = 2 + below(coin() ? 64 : 100000);
    // Built as text: a DOM this deep is what the parser must refuse.
    return json{{"$raw", coin() ? repeat("[", depth) + "0" + repeat("]", depth)
                                : repeat("{\"a\":", depth) + "0" + repeat("}", depth)}};
  }

  // Every (pointer) of the document's values, objects and arrays included.
  void pointers(const json& j, const std::string& at, std::vector<std::string>& out) {
    out.push_back(at);
    if (j.is_object())
      for (auto it = j.begin(); it != j.end(); ++it) pointers(it.value(), at + "/" + escape(it.key()), out);
    else if (j.is_array())
      for (std::size_t k = 0; k < j.size(); ++k) pointers(j[k], at + "/" + std::to_string(k), out);
  }

  static std::string escape(const std::string& key) {
    std::string s;
    for (char c : key) s += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return s;
  }

  std::string mutate_json(const std::string& text, std::string& what, bool one_line) {
    json j;
    try {
      // The walk below and nlohmann's serializer recurse once per level: a base this deep (from
      // an earlier round) is mutated as bytes instead.
      j = json::parse(text, [](int depth, json::parse_event_t, json&) {
        if (depth > 200) throw std::length_error("deep");
        return true;
      });
    } catch (const std::exception&) {
      what = "byte flips (unparsable or deep base)";
      return flip_bytes(text);
    }
    std::vector<std::string> ptrs;
    pointers(j, "", ptrs);
    const std::string p = ptrs[below(ptrs.size())];
    json::json_pointer ptr(p);
    std::string raw;
    switch (below(5)) {
      case 0: {  // key deletion
        what = "key deletion at " + p;
        if (p.empty()) return text;
        json& parent = j[ptr.parent_pointer()];
        if (parent.is_object()) parent.erase(ptr.back());
        else if (parent.is_array() && !parent.empty()) parent.erase(parent.begin() + static_cast<long>(below(parent.size())));
        break;
      }
      case 1: {  // type swap / odd scalar
        const json v = random_scalar();
        what = fmt::format("type swap at {} ({})", p, v.is_string() ? fmt::format("string of {} chars", v.get<std::string>().size()) : v.dump());
        if (p.empty()) return v.dump();
        j[ptr] = v;
        break;
      }
      case 2: {  // deep nesting
        what = "deep nesting at " + p;
        raw = deep_value()["$raw"].get<std::string>();
        break;
      }
      case 3: {  // expression-like strings where strings are
        std::vector<std::string> strings;
        for (const auto& q : ptrs)
          if (j[json::json_pointer(q)].is_string()) strings.push_back(q);
        if (strings.empty()) return text;
        const std::string q = strings[below(strings.size())];
        const std::string e = coin() ? deep_expression() : long_expression();
        what = fmt::format("expression of {} chars at {}", e.size(), q);
        j[json::json_pointer(q)] = e;
        break;
      }
      default: {  // a new unknown key, sometimes huge
        what = "added key at " + p;
        json& target = j[ptr];
        if (target.is_object()) target[fmt::format("fuzz{}", below(1000))] = random_scalar();
        else if (target.is_array()) target.push_back(random_scalar());
        break;
      }
    }
    if (raw.empty()) return j.dump(one_line ? -1 : 1);
    if (p.empty()) return raw;
    j[ptr] = "@@RAW@@";
    std::string out = j.dump(one_line ? -1 : 1);
    out.replace(out.find("\"@@RAW@@\""), 9, raw);
    return out;
  }

  std::mt19937_64 rng_;
};

std::vector<fs::path> base_tasks(const Options& o) {
  std::vector<fs::path> out;
  for (const char* where : {"dataset", "tests/fixtures/tasks"}) {
    for (const auto& e : fs::directory_iterator(fs::path(o.source) / where))
      if (e.is_directory() && fs::is_regular_file(e.path() / "definition.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int run_random(const Options& o, const Scratch& s, Clock::time_point deadline) {
  Mutator m(o.seed);
  const auto bases = base_tasks(o);
  int failures = 0, cases = 0;
  double slowest = 0;
  long peak_kb = 0;
  while (Clock::now() < deadline && failures < 5) {
    const fs::path base = bases[m.below(bases.size())];
    const std::string name = base.filename().string();
    const fs::path dir = s.task(base, name);
    static const char* const kFiles[] = {"definition.json", "definition.json", "workloads.jsonl", "design.json", "rubric.json"};
    const fs::path file = dir / kFiles[m.below(5)];
    if (!fs::exists(file)) continue;
    std::string text = read(file), what;
    const int rounds = 1 + static_cast<int>(m.below(3));
    std::string all;
    for (int k = 0; k < rounds; ++k) {
      text = m.mutate(text, what);
      all += (all.empty() ? "" : "; ") + what;
    }
    write(file, text);
    const RunResult r = run_validate(o, s.root, name, s.root / "log.txt");
    ++cases;
    slowest = std::max(slowest, r.cpu_seconds);
    peak_kb = std::max(peak_kb, r.max_rss_kb);
    const std::string problem = judge(o, r);
    if (problem.empty()) continue;
    ++failures;
    const fs::path keep = fs::path(o.out) / fmt::format("failure_{}_{}", cases, name);
    fs::create_directories(keep);
    fs::copy(dir, keep, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    fmt::print("FAIL random case {} ({} / {}: {}): {}\n     kept in {}\n     output:\n{}\n", cases, name,
               file.filename().string(), all, problem, keep.string(), r.output);
  }
  fmt::print("random: {} case(s) from seed {}, {} failure(s), slowest {:.2f} s CPU, peak RSS {} MiB\n", cases, o.seed,
             failures, slowest, peak_kb / 1024);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress survives a kill by ctest's timeout
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--d2k") o.d2k = v;
    else if (a == "--source") o.source = v;
    else if (a == "--out") o.out = v;
    else if (a == "--seconds") o.seconds = std::stod(v);
    else if (a == "--case-seconds") o.case_seconds = std::stod(v);
    else if (a == "--hang-seconds") o.hang_seconds = std::stod(v);
    else if (a == "--seed") o.seed = std::stoull(v);
    else if (a == "--max-rss-mb") o.max_rss_mb = std::stol(v);
    else {
      fmt::print(stderr, "task_fuzz: unknown option {}\n", a);
      return 2;
    }
  }
  if (const char* s = std::getenv("D2K_FUZZ_SECONDS")) o.seconds = std::stod(s);
  if (const char* s = std::getenv("D2K_FUZZ_SEED")) o.seed = std::stoull(s);
  if (o.d2k.empty() || o.source.empty()) {
    fmt::print(stderr, "usage: task_fuzz --d2k PATH --source DIR [--seconds N] [--seed S] [--out DIR]\n");
    return 2;
  }
  if (o.out.empty()) o.out = (fs::temp_directory_path() / "d2k_fuzz_failures").string();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  const Scratch s(o, "run");
  int failures = run_corpus(o, s);
  failures += run_random(o, s, deadline);
  fmt::print("{}\n", failures == 0 ? "task_fuzz: PASSED" : fmt::format("task_fuzz: {} failure(s)", failures));
  return failures == 0 ? 0 : 1;
}

// NIST's SP 800-90B reference outputs (../shared/vectors/sp800-90b/*.res, written by the
// tool's own -vv mode): "<Literal|Bitstring> <name> Estimate: <field> = <value>" lines and
// the closing H_bitstring / H_original / assessed lines.
#pragma once

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ea/ea.h"
#include "tests/check.h"

namespace qe::check {

struct EaReference {
  // "Literal most_common_value" -> value, also "H_bitstring", "H_original", "H_assessed",
  // and every other "<Track> <Estimator>: <field>" pair as written.
  std::map<std::string, double> values;
  bool has(const std::string& key) const { return values.count(key) != 0; }
  double at(const std::string& key) const { return values.at(key); }
};

inline std::string estimator_key(const std::string& nist_name) {
  static const std::map<std::string, std::string> names = {
      {"Most Common Value", "most_common_value"},
      {"Collision", "collision"},
      {"Markov", "markov"},
      {"Compression", "compression"},
      {"t-Tuple", "t_tuple"},
      {"LRS", "lrs"},
      {"MultiMCW Prediction", "multi_mcw"},
      {"Lag Prediction", "lag"},
      {"MultiMMC Prediction", "multi_mmc"},
      {"LZ78Y Prediction", "lz78y"},
  };
  const auto it = names.find(nist_name);
  return it == names.end() ? nist_name : it->second;
}

inline EaReference read_ea_reference(const std::string& file) {
  EaReference ref;
  std::istringstream in(read_file(vector_path("sp800-90b/" + file)));
  for (std::string line; std::getline(in, line);) {
    auto number_after = [&line](size_t pos) { return std::strtod(line.c_str() + pos, nullptr); };
    const size_t est = line.find(" Estimate: ");
    if ((line.rfind("Literal ", 0) == 0 || line.rfind("Bitstring ", 0) == 0) && est != std::string::npos) {
      const size_t sp = line.find(' ');
      const std::string track = line.substr(0, sp);
      const std::string name = estimator_key(line.substr(sp + 1, est - sp - 1));
      const std::string rest = line.substr(est + 11);
      const size_t eq = rest.find(" = ");
      if (eq == std::string::npos) continue;
      const std::string field = rest.substr(0, eq);
      const double value = number_after(est + 11 + eq + 3);
      if (field == "min entropy") ref.values[track + " " + name] = value;
      else ref.values[track + " " + name + ": " + field] = value;
    } else if (line.rfind("H_bitstring = ", 0) == 0) {
      ref.values["H_bitstring"] = number_after(14);
    } else if (line.rfind("H_original", 0) == 0) {
      ref.values["H_original"] = number_after(line.find_first_of(":=") + 1);
    } else if (line.rfind("Assessed min entropy: ", 0) == 0) {
      ref.values["H_assessed"] = number_after(22);
    } else {
      const size_t colon = line.rfind(": ");
      const size_t eq = line.rfind(" = ");
      if (colon != std::string::npos && eq != std::string::npos && eq > colon)
        ref.values[line.substr(0, eq)] = number_after(eq + 3);
    }
  }
  return ref;
}

inline std::vector<uint8_t> read_samples(const std::string& file) {
  const std::string bytes = read_file(vector_path("sp800-90b/" + file));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace qe::check

// The class spreadsheet, answers.csv (docs/marking.md).
#include "teach/answers_csv.hpp"

// The class spreadsheet.
#pragma once

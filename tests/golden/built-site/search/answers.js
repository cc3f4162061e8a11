window.NANOPEDIA_SEARCH_ANSWERS=["The alpha failure happens when bf16 weights meet fp32 inputs.","The beta failure is a watchdog timeout after one rank stops issuing collectives."];

/* placeholder until lib/roce lands */
